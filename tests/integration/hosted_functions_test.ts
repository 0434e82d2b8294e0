/**
 * A hosted-shaped run: each function's entry point (supabase/functions/<name>/index.ts, what the
 * CLI deploys) booted as its own process with only the environment hosted Supabase provides
 * (SUPABASE_URL, SUPABASE_ANON_KEY, SUPABASE_SERVICE_ROLE_KEY, SUPABASE_DB_URL, SUPABASE_JWKS) plus
 * the secrets the README tells operators to set, answering real requests. A wrong variable name
 * or a missing hosted default fails here, not on deploy.
 *
 * SUPABASE_URL is a non-loopback name (so every hosted default applies); the processes reach it
 * through HTTP_PROXY, a stand-in for Supabase Auth on 127.0.0.1.
 */
import assert from "node:assert/strict";
import { exportJWK, generateKeyPair, jwtVerify, SignJWT } from "jose";
import { bearerCredential } from "../../supabase/functions/_shared/bearer.ts";
import { LOCAL_JWT_SECRET } from "../../supabase/functions/_shared/config.ts";
import { mintUserJwt } from "../../local/auth/jwt.ts";
import { createTestDatabase } from "../helpers/database.ts";
import { setupProject } from "../helpers/vm_reporter.ts";

const SUPABASE_URL = "http://abcdefghijklmnop.supabase.test";
const ISSUER = `${SUPABASE_URL}/auth/v1`;
const ANON_KEY = "anon-key-of-the-hosted-project";
const SUBSCRIPTION = "11111111-2222-4333-8444-555555555555";

const signing = await generateKeyPair("ES256");
const jwks = { keys: [{ ...(await exportJWK(signing.publicKey)), kid: "k1", alg: "ES256" }] };

/** Supabase Auth's `/auth/v1/user` for the project's host, as the functions' HTTP proxy. */
function serveAuth() {
  const seen: string[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    const url = new URL(request.url);
    seen.push(`${url.host}${url.pathname} apikey=${request.headers.get("apikey")}`);
    const token = bearerCredential(request.headers.get("authorization")) ?? "";
    try {
      const { payload } = await jwtVerify(token, new TextEncoder().encode(LOCAL_JWT_SECRET));
      return Response.json({ id: payload.sub, aud: "authenticated" });
    } catch {
      return Response.json({ error_code: "bad_jwt" }, { status: 403 });
    }
  });
  return { proxy: `http://127.0.0.1:${server.addr.port}`, seen, close: () => server.shutdown() };
}

interface Booted extends AsyncDisposable {
  origin: string;
  output(): string;
}

/** Runs a function's index.ts with exactly `env` (plus what deno itself needs). */
async function boot(name: string, env: Record<string, string>): Promise<Booted> {
  const child = new Deno.Command("deno", {
    args: ["run", "-A", `supabase/functions/${name}/index.ts`],
    cwd: new URL("../../", import.meta.url).pathname,
    clearEnv: true,
    env: {
      PATH: Deno.env.get("PATH")!,
      HOME: Deno.env.get("HOME") ?? "/root",
      DENO_SERVE_ADDRESS: "tcp:127.0.0.1:0",
      ...env,
    },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let text = "";
  const listening = Promise.withResolvers<string>();
  const pump = async (stream: ReadableStream<Uint8Array>) => {
    for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
      text += chunk;
      const match = /Listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(text);
      if (match) listening.resolve(match[1]!);
    }
  };
  const pumps = Promise.all([pump(child.stdout), pump(child.stderr)]);
  const stop = async () => {
    try {
      child.kill("SIGKILL");
    } catch { /* already gone */ }
    await child.status;
    await pumps;
  };
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    const origin = await Promise.race([
      listening.promise,
      child.status.then(() => {
        throw new Error(`${name} exited before listening:\n${text}`);
      }),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${name} not listening:\n${text}`)), 30_000);
      }),
    ]);
    return { origin, output: () => text, [Symbol.asyncDispose]: stop };
  } catch (error) {
    await stop();
    throw error;
  } finally {
    clearTimeout(timer);
  }
}

function hostedEnv(databaseUrl: string, proxy: string): Record<string, string> {
  return {
    // What hosted Supabase provides.
    SUPABASE_URL,
    SUPABASE_ANON_KEY: ANON_KEY,
    SUPABASE_SERVICE_ROLE_KEY: "service-role-key-of-the-hosted-project",
    SUPABASE_DB_URL: databaseUrl,
    SUPABASE_JWKS: JSON.stringify(jwks),
    // The secrets the README's deploy steps set.
    DATABASE_URL: databaseUrl,
    CORS_ALLOWED_ORIGINS: "https://app.example.com",
    RECONCILER_SECRET: "r".repeat(64),
    COMPUTE_DRIVER: "azure",
    AZURE_TENANT_ID: "22222222-2222-4333-8444-555555555555",
    AZURE_CLIENT_ID: "33333333-2222-4333-8444-555555555555",
    AZURE_CLIENT_SECRET: "client-secret",
    AZURE_SUBSCRIPTION_ID: SUBSCRIPTION,
    AZURE_RESOURCE_GROUP: "rg-agents",
    AZURE_SUBNET_ID:
      `/subscriptions/${SUBSCRIPTION}/resourceGroups/rg-net/providers/Microsoft.Network/virtualNetworks/vnet/subnets/vms`,
    AZURE_VM_IMAGE: "Canonical:ubuntu-24_04-lts:server:latest",
    AZURE_ADMIN_USERNAME: "agent",
    AZURE_SSH_PUBLIC_KEY: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBv1 ops@example",
    // Test plumbing only: the project's host is reached through the Auth stand-in.
    HTTP_PROXY: proxy,
    NO_PROXY: "127.0.0.1,localhost",
  };
}

const post = (url: string, headers: Record<string, string>, body: unknown = {}) =>
  fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });

Deno.test("each function's entry point answers with only hosted's environment and the README's secrets", async (t) => {
  await using db = await createTestDatabase();
  const auth = serveAuth();
  const env = hostedEnv(db.url, auth.proxy);
  const project = await setupProject(db.sql);
  const secrets = [project.token, env.RECONCILER_SECRET!, env.AZURE_CLIENT_SECRET!];
  try {
    await t.step("vm-api: ES256 through SUPABASE_JWKS, HS256 through /auth/v1/user", async () => {
      await using api = await boot("vm-api", env);
      const es256 = await new SignJWT({ role: "authenticated" })
        .setProtectedHeader({ alg: "ES256", kid: "k1" })
        .setSubject(project.userId).setAudience("authenticated").setIssuer(ISSUER)
        .setIssuedAt().setExpirationTime("1h").sign(signing.privateKey);
      const hs256 = await mintUserJwt(project.userId, { issuer: ISSUER });
      const status = { action: "status", project_id: project.projectId };
      for (const token of [es256, hs256]) {
        const answer = await post(
          `${api.origin}/vm-api`,
          { authorization: `Bearer ${token}` },
          status,
        );
        assert.equal(answer.status, 200, await answer.clone().text());
        const body = await answer.json() as { data: { project: { id: string } } };
        assert.equal(body.data.project.id, project.projectId);
      }
      assert.deepEqual(auth.seen, [
        `abcdefghijklmnop.supabase.test/auth/v1/user apikey=${ANON_KEY}`,
      ], "HS256 went to Auth once, with the anon key; ES256 never did");
      const local = await mintUserJwt(project.userId); // the local issuer is refused on hosted
      const refused = await post(
        `${api.origin}/vm-api`,
        { authorization: `Bearer ${local}` },
        status,
      );
      assert.equal(refused.status, 401);
      await refused.body?.cancel();
      const preflight = await fetch(`${api.origin}/vm-api`, {
        method: "OPTIONS",
        headers: { origin: "https://app.example.com", "access-control-request-method": "POST" },
      });
      await preflight.body?.cancel();
      assert.equal(preflight.headers.get("access-control-allow-origin"), "https://app.example.com");
      assert.match(api.output(), /DIRECT DATABASE CONNECTION: DATABASE_URL is not the transaction/);
      for (const s of [es256, hs256, ...secrets]) assert.ok(!api.output().includes(s));
    });

    await t.step("vm-reporter: a VM's report on the hosted path", async () => {
      await using reporter = await boot("vm-reporter", env);
      const answer = await post(`${reporter.origin}/vm-reporter/health`, {
        authorization: `Bearer ${project.token}`,
        "x-project-id": project.projectId,
      }, { cpu_percent: 1, memory_percent: 2, disk_percent: 3, agents: [] });
      assert.equal(answer.status, 200, await answer.clone().text());
      await answer.body?.cancel();
      for (const s of secrets) assert.ok(!reporter.output().includes(s));
    });

    await t.step("vm-reconciler: its secret runs it, anything else is refused", async () => {
      await using reconciler = await boot("vm-reconciler", env);
      const run = await post(`${reconciler.origin}/vm-reconciler`, {
        authorization: `Bearer ${env.RECONCILER_SECRET}`,
      });
      assert.equal(run.status, 200, await run.clone().text());
      await run.body?.cancel();
      const refused = await post(`${reconciler.origin}/vm-reconciler`, {
        authorization: "Bearer wrong",
      });
      assert.equal(refused.status, 401);
      await refused.body?.cancel();
      for (const s of secrets) assert.ok(!reconciler.output().includes(s));
    });

    await t.step(
      "without DATABASE_URL a hosted function says loudly it is on the direct URL",
      async () => {
        const { DATABASE_URL: _, ...runtimeOnly } = env;
        await using reporter = await boot("vm-reporter", runtimeOnly);
        assert.match(reporter.output(), /DIRECT DATABASE CONNECTION: DATABASE_URL is not set/);
      },
    );
  } finally {
    await auth.close();
  }
});
