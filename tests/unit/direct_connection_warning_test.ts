import assert from "node:assert/strict";
import { loadConfig } from "../../supabase/functions/_shared/config.ts";
import { directConnectionWarning } from "../../supabase/functions/_shared/base_services.ts";

const hosted = {
  SUPABASE_URL: "https://abc.supabase.co",
  SUPABASE_DB_URL: "postgres://postgres:pw@db.abc.supabase.co:5432/postgres",
  COMPUTE_DRIVER: "local",
};
const pooler = "postgres://postgres.abc:pw@aws-0-eu-west-1.pooler.supabase.com:6543/postgres" +
  "?sslmode=require";

const warningFor = (env: Record<string, string>) =>
  directConnectionWarning(loadConfig({ ...hosted, ...env }));

Deno.test("a hosted function on the runtime's direct SUPABASE_DB_URL is warned about", () => {
  const warning = warningFor({});
  assert.match(warning ?? "", /^DIRECT DATABASE CONNECTION: DATABASE_URL is not set/);
  assert.match(warning ?? "", /port 6543, sslmode=require/);
  assert.ok(!warning?.includes("pw"), "the URL's password must not be in the warning");
});

Deno.test("a hosted DATABASE_URL that is not the transaction pooler is warned about", () => {
  const session = pooler.replace(":6543/", ":5432/");
  assert.match(warningFor({ DATABASE_URL: session }) ?? "", /is not the transaction pooler/);
});

Deno.test("the transaction pooler on hosted, and any local database, get no warning", () => {
  assert.equal(warningFor({ DATABASE_URL: pooler }), undefined);
  assert.equal(
    directConnectionWarning(loadConfig({ DATABASE_URL: "postgres://u@127.0.0.1:5432/db" })),
    undefined,
  );
});
