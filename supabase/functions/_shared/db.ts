/**
 * The PostgreSQL client. One pool per isolate; on hosted Supabase `SUPABASE_DB_URL` goes through
 * the transaction-mode pooler (port 6543), which cannot keep prepared statements.
 */
import postgres from "postgres";

export type Sql = postgres.Sql;

export function connect(url: string, options: { max?: number } = {}): Sql {
  const transactionPooler = new URL(url).port === "6543";
  return postgres(url, {
    max: options.max ?? 10,
    prepare: !transactionPooler,
    idle_timeout: 60,
    connect_timeout: 10,
    onnotice: () => {},
    connection: { application_name: "vm-service" },
  });
}
