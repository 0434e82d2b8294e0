import assert from "node:assert/strict";
import {
  ConfigError,
  loadConfig,
  LOCAL_JWT_SECRET,
} from "../../supabase/functions/_shared/config.ts";

const base = { DATABASE_URL: "postgres://u@127.0.0.1:5432/db" };

Deno.test("loadConfig() applies the contract's defaults", () => {
  const config = loadConfig(base);
  assert.equal(config.port, 54321);
  assert.equal(config.maxBodyBytes, 1_048_576);
  assert.equal(config.vmApiRateLimit, 20);
  assert.equal(config.vmReporterRateLimit, 100);
  assert.equal(config.activeProjectLimit, null);
  assert.equal(config.stuckAfterSeconds, 300);
  assert.equal(config.computeDriver, "local");
  assert.deepEqual(config.local, {
    bootMs: 3000,
    agentCycleMs: 5000,
    stopMs: 2000,
    deleteMs: 2000,
  });
  assert.equal(config.reconcileIntervalMs, 2000);
  assert.deepEqual(config.corsAllowedOrigins, ["http://localhost:3000", "http://localhost:3001"]);
  assert.equal(config.jwt.secret, LOCAL_JWT_SECRET);
  assert.equal(config.jwt.issuer, "http://127.0.0.1:54321/auth/v1");
});

Deno.test("loadConfig() names the variable that is malformed", () => {
  assert.throws(() => loadConfig({ ...base, VM_REPORTER_RATE_LIMIT: "lots" }), (e: unknown) => {
    assert.ok(e instanceof ConfigError);
    assert.match(e.message, /VM_REPORTER_RATE_LIMIT/);
    return true;
  });
  assert.throws(() => loadConfig({ ...base, COMPUTE_DRIVER: "gcp" }), /COMPUTE_DRIVER/);
  assert.throws(() => loadConfig({ ...base, CORS_ALLOWED_ORIGINS: "https://a.test/path" }), /CORS/);
  assert.throws(() => loadConfig({}), /DATABASE_URL/);
});

Deno.test("loadConfig() refuses a hosted project left on the default compute driver", () => {
  assert.throws(
    () => loadConfig({ ...base, SUPABASE_URL: "https://abc.supabase.co" }),
    /COMPUTE_DRIVER: set it for a hosted project/,
  );
  const demo = loadConfig({
    ...base,
    SUPABASE_URL: "https://abc.supabase.co",
    COMPUTE_DRIVER: "local",
  });
  assert.equal(demo.computeDriver, "local");
});

Deno.test("loadConfig() never falls back to the local JWT secret for a hosted project", () => {
  const hosted = loadConfig({
    ...base,
    SUPABASE_URL: "https://abc.supabase.co",
    COMPUTE_DRIVER: "local",
  });
  assert.equal(hosted.jwt.secret, undefined);
  assert.equal(hosted.jwt.jwksUrl?.href, "https://abc.supabase.co/auth/v1/.well-known/jwks.json");
  assert.equal(hosted.jwt.issuer, undefined);
});

Deno.test("loadConfig() reads VM_REPORTER_RATE_LIMIT and ACTIVE_PROJECT_LIMIT", () => {
  const config = loadConfig({ ...base, VM_REPORTER_RATE_LIMIT: "7", ACTIVE_PROJECT_LIMIT: "3" });
  assert.equal(config.vmReporterRateLimit, 7);
  assert.equal(config.activeProjectLimit, 3);
});
