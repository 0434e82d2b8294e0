import assert from "node:assert/strict";
import { ConfigError, loadConfig } from "../../supabase/functions/_shared/config.ts";
import { createCompute } from "../../supabase/functions/_shared/compute/create_compute.ts";
import type { Sql } from "../../supabase/functions/_shared/db.ts";
import { createLogger } from "../../supabase/functions/_shared/log.ts";

/** A database handle that records any use: the local driver's DDL would be its first call. */
function recordingSql() {
  const used: string[] = [];
  const sql = new Proxy(() => {}, {
    get: (_, name) => {
      used.push(String(name));
      return () => Promise.reject(new Error("no database here"));
    },
    apply: () => {
      used.push("query");
      return Promise.reject(new Error("no database here"));
    },
  }) as unknown as Sql;
  return { sql, used };
}

Deno.test("the local driver never touches a hosted project's database", async () => {
  const config = loadConfig({
    DATABASE_URL: "postgres://u@db.abc.supabase.co:5432/postgres",
    SUPABASE_URL: "https://abc.supabase.co",
    COMPUTE_DRIVER: "local",
  });
  const { sql, used } = recordingSql();
  await assert.rejects(createCompute(config, sql, createLogger("error")), (e: unknown) => {
    assert.ok(e instanceof ConfigError);
    assert.match(e.message, /COMPUTE_DRIVER=local never runs on a hosted project/);
    return true;
  });
  assert.deepEqual(used, [], "the database was used");
});

Deno.test("locally the local driver starts by creating its schema", async () => {
  const { sql, used } = recordingSql();
  const config = loadConfig({ DATABASE_URL: "postgres://u@127.0.0.1:5432/db" });
  await assert.rejects(createCompute(config, sql, createLogger("error")), /no database here/);
  assert.ok(used.length > 0, "the local driver did not reach the database");
});
