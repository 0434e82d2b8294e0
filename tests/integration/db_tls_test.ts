/**
 * The functions' database client speaks TLS whenever the URL's sslmode asks for it, against a
 * real PostgreSQL with ssl=on and a certificate from a throw-away test CA.
 */
import assert from "node:assert/strict";
import { connect, tlsOf } from "../../supabase/functions/_shared/db.ts";
import { startCluster } from "../../local/database/postgres_cluster.ts";
import { createTestTls } from "../../local/host/test_tls.ts";

const encrypted = async (url: string) => {
  const sql = connect(url, { max: 1 });
  try {
    const [row] = await sql<{ ssl: boolean }[]>`
      select ssl from pg_stat_ssl where pid = pg_backend_pid()`;
    return row!.ssl;
  } finally {
    await sql.end({ timeout: 1 });
  }
};

Deno.test("the database client uses TLS exactly when the URL's sslmode asks for it", async (t) => {
  await using tls = await createTestTls();
  const workDir = await Deno.makeTempDir({ prefix: "vm-service-tls-db-" });
  const cluster = await startCluster({
    dataDir: `${workDir}/postgres`,
    tls: { cert: tls.cert, key: tls.key },
  });
  const at = (host: string, query: string) =>
    `postgres://postgres@${host}:${cluster.port}/postgres${query}`;
  try {
    await t.step("no sslmode: plain, as before", async () => {
      assert.equal(await encrypted(at("127.0.0.1", "")), false);
      assert.equal(await encrypted(at("127.0.0.1", "?sslmode=disable")), false);
    });
    await t.step("sslmode=require and prefer: encrypted", async () => {
      assert.equal(await encrypted(at("127.0.0.1", "?sslmode=require")), true);
      assert.equal(await encrypted(at("127.0.0.1", "?sslmode=prefer")), true);
    });
    await t.step("sslmode=verify-full with sslrootcert: encrypted and verified", async () => {
      const root = encodeURIComponent(tls.caCertPath);
      assert.equal(
        await encrypted(at("localhost", `?sslmode=verify-full&sslrootcert=${root}`)),
        true,
      );
      assert.equal(
        await encrypted(at("127.0.0.1", `?sslmode=verify-ca&sslrootcert=${root}`)),
        true,
      );
    });
    await t.step("sslmode=verify-full refuses a certificate it cannot verify", async () => {
      await assert.rejects(encrypted(at("localhost", "?sslmode=verify-full")));
    });
  } finally {
    await cluster.stop();
    await Deno.remove(workDir, { recursive: true }).catch(() => {});
  }
});

Deno.test("tlsOf() keeps sslmode and sslrootcert out of what postgres.js sends the server", () => {
  const { url, tls } = tlsOf(new URL("postgres://u:p@h:6543/db?sslmode=require&options=x"));
  assert.equal(tls, "require");
  assert.equal(url.href, "postgres://u:p@h:6543/db?options=x");
  assert.equal(tlsOf(new URL("postgres://u@h/db?sslmode=allow")).tls, "prefer");
  assert.throws(() => tlsOf(new URL("postgres://u@h/db?sslmode=yes")), /sslmode=yes/);
});
