/**
 * Each test file gets its own database, cloned from the migrated template that `deno task test`
 * prepares, so tests never see each other's rows and never touch `deno task start`'s data.
 */
import postgres from "postgres";

export interface TestDatabase extends AsyncDisposable {
  url: string;
  /** Superuser connection: for fixtures and for reading what the service wrote. */
  sql: postgres.Sql;
}

export async function createTestDatabase(): Promise<TestDatabase> {
  const adminUrl = Deno.env.get("TEST_DATABASE_URL");
  const template = Deno.env.get("TEST_TEMPLATE_DATABASE");
  if (!adminUrl || !template) {
    throw new Error("Run the tests with `deno task test`: it starts the test database");
  }
  const name = `test_${crypto.randomUUID().replaceAll("-", "")}`;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database ${name} template ${template}`);
  const url = adminUrl.replace(/\/[^/]*$/, `/${name}`);
  const sql = postgres(url, { max: 5, onnotice: () => {} });
  return {
    url,
    sql,
    async [Symbol.asyncDispose]() {
      await sql.end({ timeout: 5 });
      await admin.unsafe(`drop database if exists ${name} with (force)`);
      await admin.end();
    },
  };
}
