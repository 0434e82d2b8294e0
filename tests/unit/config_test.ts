import assert from "node:assert/strict";
import { DEFAULT_MAX_BODY_BYTES } from "../../supabase/functions/_contract/defaults.ts";
import {
  ConfigError,
  ENV,
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
    vmRoot: ".local/vms",
    authJwtExpirySeconds: 3600,
  });
  assert.equal(config.requestDeadlineMs, 10_000);
  assert.equal(config.dbStatementTimeoutMs, 8_000);
  assert.deepEqual(config.retentionDays, { requestLog: 30, healthSnapshots: 30 });
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
});

const hostedEnv = {
  ...base,
  SUPABASE_URL: "https://abc.supabase.co",
  SUPABASE_ANON_KEY: "anon-key",
  COMPUTE_DRIVER: "local",
};

Deno.test("loadConfig() checks a hosted project's issuer against its own Auth by default", () => {
  assert.equal(loadConfig(hostedEnv).jwt.issuer, "https://abc.supabase.co/auth/v1");
  assert.equal(
    loadConfig({ ...hostedEnv, AUTH_JWT_ISSUER: "https://auth.example.com" }).jwt.issuer,
    "https://auth.example.com",
  );
});

Deno.test("loadConfig() reads the settable AUTH_* names before their SUPABASE_* aliases", () => {
  const secret = "an-auth-secret-that-is-at-least-32-characters";
  const alias = "a-supabase-secret-that-is-at-least-32-chars";
  const both = loadConfig({
    ...base,
    AUTH_JWT_SECRET: secret,
    SUPABASE_JWT_SECRET: alias,
    AUTH_JWKS_URL: "https://keys.example.com/jwks",
    SUPABASE_JWKS_URL: "https://alias.example.com/jwks",
    AUTH_JWT_ISSUER: "https://auth.example.com",
    SUPABASE_JWT_ISSUER: "https://alias.example.com",
  });
  assert.equal(both.jwt.secret, secret);
  assert.equal(both.jwt.jwksUrl?.href, "https://keys.example.com/jwks");
  assert.equal(both.jwt.issuer, "https://auth.example.com");
  const aliases = loadConfig({
    ...base,
    SUPABASE_JWT_SECRET: alias,
    SUPABASE_JWKS_URL: "https://alias.example.com/jwks",
    SUPABASE_JWT_ISSUER: "https://alias.example.com",
  });
  assert.equal(aliases.jwt.secret, alias);
  assert.equal(aliases.jwt.jwksUrl?.href, "https://alias.example.com/jwks");
  assert.equal(aliases.jwt.issuer, "https://alias.example.com");
  assert.throws(() => loadConfig({ ...base, AUTH_JWT_SECRET: "short" }), /AUTH_JWT_SECRET/);
});

Deno.test("loadConfig() confirms HS256 tokens with Auth only on hosted without a secret", () => {
  const hosted = loadConfig(hostedEnv);
  assert.equal(hosted.jwt.authServer?.userUrl.href, "https://abc.supabase.co/auth/v1/user");
  assert.equal(hosted.jwt.authServer?.apiKey, "anon-key");
  const withSecret = loadConfig({
    ...hostedEnv,
    AUTH_JWT_SECRET: "an-auth-secret-that-is-at-least-32-characters",
  });
  assert.equal(withSecret.jwt.authServer, undefined);
  assert.equal(loadConfig(base).jwt.authServer, undefined);
  const { SUPABASE_ANON_KEY: _, ...noAnonKey } = hostedEnv;
  assert.equal(loadConfig(noAnonKey).jwt.authServer, undefined);
});

Deno.test("loadConfig() takes the key set the runtime provides in SUPABASE_JWKS", () => {
  const jwks = { keys: [{ kty: "EC", crv: "P-256", x: "x", y: "y", kid: "k1" }] };
  const config = loadConfig({ ...hostedEnv, SUPABASE_JWKS: JSON.stringify(jwks) });
  assert.deepEqual(config.jwt.jwks, jwks);
  for (const malformed of ["not json {secret}", '{"keys":"nope"}', "[]"]) {
    assert.throws(() => loadConfig({ ...hostedEnv, SUPABASE_JWKS: malformed }), (e: unknown) => {
      assert.ok(e instanceof ConfigError);
      assert.match(e.message, /SUPABASE_JWKS/);
      assert.ok(!e.message.includes("secret"), "the value must not be echoed");
      return true;
    });
  }
});

Deno.test("loadConfig() reads VM_REPORTER_RATE_LIMIT and ACTIVE_PROJECT_LIMIT", () => {
  const config = loadConfig({ ...base, VM_REPORTER_RATE_LIMIT: "7", ACTIVE_PROJECT_LIMIT: "3" });
  assert.equal(config.vmReporterRateLimit, 7);
  assert.equal(config.activeProjectLimit, 3);
});

Deno.test("loadConfig() keeps the pool per isolate small on hosted, DB_POOL_MAX overrides", () => {
  assert.equal(loadConfig(base).dbPoolMax, 10);
  assert.equal(loadConfig(hostedEnv).dbPoolMax, 2);
  assert.equal(loadConfig({ ...hostedEnv, DB_POOL_MAX: "1" }).dbPoolMax, 1);
  assert.throws(() => loadConfig({ ...base, DB_POOL_MAX: "0" }), /DB_POOL_MAX/);
});

Deno.test("loadConfig() says which variable the database URL came from", () => {
  assert.equal(loadConfig(base).databaseUrlFrom, "DATABASE_URL");
  const runtimeOnly = loadConfig({
    SUPABASE_DB_URL: "postgres://u@db.abc.supabase.co:5432/postgres",
  });
  assert.equal(runtimeOnly.databaseUrlFrom, "SUPABASE_DB_URL");
  assert.equal(
    loadConfig({ ...base, SUPABASE_DB_URL: "postgres://direct@h/db" }).databaseUrl,
    base.DATABASE_URL,
  );
});

Deno.test("loadConfig() takes MAX_BODY_BYTES's default from the contract", () => {
  assert.equal(loadConfig(base).maxBodyBytes, DEFAULT_MAX_BODY_BYTES);
  assert.equal(loadConfig({ ...base, MAX_BODY_BYTES: "2048" }).maxBodyBytes, 2048);
});

Deno.test("loadConfig() leaves an unset optional setting absent, not undefined", () => {
  const hosted = loadConfig(hostedEnv);
  assert.ok(!("secret" in hosted.jwt));
  assert.ok(!("jwks" in hosted.jwt));
  assert.ok(!("azure" in hosted));
  assert.ok(!("reconcilerSecret" in hosted));
  assert.ok(!("secretKey" in hosted.webhooks));
  assert.ok(!("authServer" in loadConfig(base).jwt));
  const set = loadConfig({ ...base, RECONCILER_SECRET: "a-reconciler-secret-of-32-characters" });
  assert.equal(set.reconcilerSecret, "a-reconciler-secret-of-32-characters");
});

Deno.test("loadConfig() defaults webhooks differently local and hosted", () => {
  const local = loadConfig(base).webhooks;
  assert.equal(local.secretKey?.length, 32);
  assert.equal(local.allowPrivateUrls, true);
  assert.deepEqual(local.retryScheduleSeconds, [
    5,
    300,
    1800,
    7200,
    18000,
    36000,
    50400,
    72000,
    86400,
  ]);
  assert.equal(loadConfig(hostedEnv).webhooks.allowPrivateUrls, false);
  const key = btoa(String.fromCharCode(...new Uint8Array(32).fill(7)));
  assert.deepEqual(
    loadConfig({ ...hostedEnv, WEBHOOK_SECRET_KEY: key }).webhooks.secretKey,
    new Uint8Array(32).fill(7),
  );
  assert.throws(() => loadConfig({ ...base, WEBHOOK_SECRET_KEY: "c2hvcnQ=" }), /32 bytes, base64/);
});

Deno.test("every declared setting has a description and its alias a declared target", () => {
  for (const [name, setting] of Object.entries(ENV)) {
    if ("aliasOf" in setting) {
      assert.ok(setting.aliasOf in ENV, `${name}: alias of an undeclared ${setting.aliasOf}`);
    } else {
      assert.ok(setting.doc.length > 0, `${name} has no description`);
    }
  }
});
