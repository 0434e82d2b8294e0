/**
 * The PostgreSQL client. One pool per isolate, small on hosted (DB_POOL_MAX): every live isolate
 * of every function holds its own. On hosted Supabase the URL should be the transaction-mode
 * pooler (port 6543), which cannot keep prepared statements.
 *
 * TLS follows the URL's `sslmode`, with libpq's meanings: `require` encrypts without checking the
 * certificate, `verify-ca`/`verify-full` also check it (against `sslrootcert`, a PEM file, when
 * given; both check the host name too). postgres.js would send an unknown parameter such as
 * `sslrootcert` to the server as a setting, so both are taken out of the URL and applied here.
 */
import postgres from "postgres";

export type Sql = postgres.Sql;

/** The transaction-mode pooler's port on hosted Supabase (the direct connection is 5432). */
export const TRANSACTION_POOLER_PORT = "6543";

type Tls = false | "prefer" | "require" | { rejectUnauthorized: true; ca?: string };

export interface ConnectOptions {
  max: number;
  /**
   * Sent as the session's statement_timeout (lock_timeout: half of it), so the server itself ends
   * work that outlives a request; the request's own deadline covers a server that does not answer.
   */
  statementTimeoutMs?: number;
}

export function connect(url: string, options: ConnectOptions): Sql {
  const { url: plain, tls } = tlsOf(new URL(url));
  const timeouts = options.statementTimeoutMs
    ? {
      statement_timeout: options.statementTimeoutMs,
      lock_timeout: Math.ceil(options.statementTimeoutMs / 2),
    }
    : {};
  return postgres(plain.href, {
    max: options.max,
    prepare: plain.port !== TRANSACTION_POOLER_PORT,
    ssl: tls,
    idle_timeout: 60,
    connect_timeout: 5,
    onnotice: () => {},
    connection: { application_name: "vm-service", ...timeouts },
  });
}

/** What the URL's `sslmode` asks for, and the URL without the parameters handled here. */
export function tlsOf(url: URL): { url: URL; tls: Tls } {
  const plain = new URL(url);
  const mode = plain.searchParams.get("sslmode") ?? "disable";
  const rootCert = plain.searchParams.get("sslrootcert");
  plain.searchParams.delete("sslmode");
  plain.searchParams.delete("sslrootcert");
  switch (mode) {
    case "disable":
      return { url: plain, tls: false };
    case "allow":
    case "prefer":
      return { url: plain, tls: "prefer" };
    case "require":
      return { url: plain, tls: "require" };
    case "verify-ca":
    case "verify-full":
      return {
        url: plain,
        tls: {
          rejectUnauthorized: true,
          ...(rootCert ? { ca: Deno.readTextFileSync(rootCert) } : {}),
        },
      };
    default:
      throw new Error(`sslmode=${mode} in the database URL is not one of libpq's modes`);
  }
}
