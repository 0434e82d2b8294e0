/**
 * The local stack as `supabase start` lays it out: one port for /rest/v1 and /functions/v1, the
 * gateway's API-key rule, the keys printed at start, PostgREST supervised (restarted when it dies,
 * stopped with the rest, a clear failure when it cannot start), and the seed that `deno task reset`
 * and a new local database get.
 */
import assert from "node:assert/strict";
import { createClient } from "@supabase/supabase-js";
import { decodeJwt } from "jose";
import { mintApiKey, mintUserJwt } from "../../local/auth/jwt.ts";
import { resetDatabase } from "../../local/database/reset_database.ts";
import { listMigrations } from "../../local/database/migrations.ts";
import { DEMO_ORGANIZATION_ID, DEMO_USER_EMAIL, DEMO_USER_ID } from "../../local/database/seed.ts";
import { ANON_KEY, SERVICE_ROLE_KEY } from "../helpers/dashboard.ts";
import { createTestDatabase } from "../helpers/database.ts";
import { setupProject } from "../helpers/vm_reporter.ts";
import { startServer } from "../helpers/server.ts";
import { eventually } from "../helpers/vm_api.ts";

/** The Supabase CLI's well-known local anon key (signed with its local JWT secret). */
const CLI_LOCAL_ANON_KEY =
  "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJpc3MiOiJzdXBhYmFzZS1kZW1vIiwicm9sZSI6ImFub24iLCJleHAiOjE5ODM4MTI5OTZ9.CRXP1A7WOeoJeXxjNni43kdQwgnWNReilDMblYTn_I0";

const NO_SESSION = { persistSession: false, autoRefreshToken: false, detectSessionInUrl: false };

Deno.test("the gateway takes the apikey as Supabase's does", async (t) => {
  await using db = await createTestDatabase();
  const a = await setupProject(db.sql);
  const b = await setupProject(db.sql);
  await using server = await startServer(db.url);
  const rest = (path: string, headers: Record<string, string> = {}) =>
    fetch(`${server.origin}/rest/v1${path}`, { headers });

  await t.step("start prints the API URL, DB URL and both keys", () => {
    const out = server.output();
    assert.match(out, new RegExp(`API URL: +${server.origin}\\n`));
    assert.match(out, /DB URL: +postgres:\/\/\S+/);
    assert.ok(out.includes(`anon key:      ${ANON_KEY}`));
    assert.ok(out.includes(`service_role key: ${SERVICE_ROLE_KEY}`));
    assert.equal(ANON_KEY, CLI_LOCAL_ANON_KEY, "the CLI's local anon key works as it is");
  });

  await t.step("no apikey: 401, and PostgREST is never asked", async () => {
    const response = await rest("/projects");
    assert.equal(response.status, 401);
    assert.equal((await response.json()).message, "No API key found in request");
  });

  await t.step(
    "a key not signed with the project's secret, or a user token, is refused",
    async () => {
      const forged = await mintApiKey("anon", "another-secret-that-is-at-least-32-characters");
      for (const key of [forged, await mintUserJwt(a.userId), "not-a-jwt"]) {
        const response = await rest("/projects", { apikey: key });
        assert.equal(response.status, 401);
        assert.equal((await response.json()).message, "Invalid API key");
      }
    },
  );

  await t.step("the anon key alone runs as anon: no rows", async () => {
    const response = await rest("/projects", { apikey: ANON_KEY });
    const body = await response.json();
    assert.ok(response.status === 401 || (response.ok && body.length === 0), JSON.stringify(body));
  });

  await t.step("the apikey may come as a query parameter", async () => {
    const response = await rest(`/projects?apikey=${ANON_KEY}&select=id`, {
      authorization: `Bearer ${await mintUserJwt(a.userId)}`,
    });
    assert.deepEqual(await response.json(), [{ id: a.projectId }]);
  });

  await t.step("anon key + a user's token runs as that user", async () => {
    const supabase = createClient(server.origin, ANON_KEY, {
      auth: NO_SESSION,
      accessToken: async () => await mintUserJwt(b.userId),
    });
    const { data } = await supabase.from("projects").select("id");
    assert.deepEqual(data, [{ id: b.projectId }]);
  });

  await t.step("an expired user token is PostgREST's 401", async () => {
    const expired = await mintUserJwt(a.userId, { expiresIn: -60 });
    const response = await rest("/projects", {
      apikey: ANON_KEY,
      authorization: `Bearer ${expired}`,
    });
    assert.equal(response.status, 401);
    assert.equal((await response.json()).code, "PGRST301");
  });

  await t.step("the service_role key bypasses RLS, as on hosted", async () => {
    const supabase = createClient(server.origin, SERVICE_ROLE_KEY, { auth: NO_SESSION });
    const { data } = await supabase.from("projects").select("id").order("id");
    assert.deepEqual(data?.map((r) => r.id).sort(), [a.projectId, b.projectId].sort());
  });

  await t.step("CORS preflights reach PostgREST without a key", async () => {
    const response = await fetch(`${server.origin}/rest/v1/projects`, {
      method: "OPTIONS",
      headers: {
        origin: "http://localhost:3000",
        "access-control-request-method": "GET",
        "access-control-request-headers": "apikey,authorization",
      },
    });
    await response.body?.cancel();
    assert.equal(response.status, 200);
    assert.ok(response.headers.get("access-control-allow-origin"));
  });

  await t.step("/functions/v1 still reaches the functions on the same port", async () => {
    const response = await fetch(`${server.origin}/functions/v1/vm-api`, { method: "GET" });
    await response.body?.cancel();
    assert.equal(response.status, 405);
  });
});

Deno.test("PostgREST is supervised: restarted when it dies, stopped with the stack", async () => {
  await using db = await createTestDatabase();
  const a = await setupProject(db.sql);
  const server = await startServer(db.url);
  try {
    const pid = dataApiPid(server.output());
    Deno.kill(pid, "SIGKILL");
    const headers = { apikey: ANON_KEY, authorization: `Bearer ${await mintUserJwt(a.userId)}` };
    const rows = await eventually(async () => {
      const response = await fetch(`${server.origin}/rest/v1/projects?select=id`, { headers })
        .catch(() => undefined);
      if (!response?.ok) {
        await response?.body?.cancel();
        return undefined;
      }
      return await response.json();
    }, { timeoutMs: 20_000, intervalMs: 200 });
    assert.deepEqual(rows, [{ id: a.projectId }]);
    assert.match(server.output(), /PostgREST exited \(code 137\); restarting/);
    const current = await eventually(() => {
      const back = /PostgREST is back \(pid (\d+)\)/.exec(server.output());
      return Promise.resolve(back ? Number(back[1]) : undefined);
    });
    assert.notEqual(current, pid);
    await server.stop();
    assert.equal(await processExists(current), false, "PostgREST outlived the stack");
  } finally {
    await server.stop();
  }
});

Deno.test("PostgREST dies with a stack that is killed outright (SIGKILL)", async () => {
  await using db = await createTestDatabase();
  const server = await startServer(db.url);
  try {
    const pid = dataApiPid(server.output());
    await server.kill();
    const gone = await eventually(
      async () => (await processExists(pid)) ? undefined : true,
      { timeoutMs: 10_000 },
    );
    assert.equal(gone, true);
  } finally {
    await server.stop();
  }
});

Deno.test("a PostgREST that cannot start fails the start with a clear message", async () => {
  await using db = await createTestDatabase();
  const bin = await Deno.makeTempDir({ prefix: "fake-postgrest-" });
  try {
    // Answers --version like PostgREST, then fails the way a bad configuration does.
    await Deno.writeTextFile(
      `${bin}/postgrest`,
      '#!/bin/sh\nif [ "$1" = "--version" ]; then echo "PostgREST 12.0.2"; exit 0; fi\n' +
        'echo "Failed to load the schema cache" >&2\nexit 1\n',
    );
    await Deno.chmod(`${bin}/postgrest`, 0o755);
    const failed = await startServer(db.url, { PATH: `${bin}:${Deno.env.get("PATH")}` }).then(
      () => assert.fail("the stack started without its Data API"),
      (error: Error) => error.message,
    );
    assert.match(failed, /server exited \(1\) before it was ready/);
    assert.match(failed, /cannot start: PostgREST did not start \(it exited with code 1\)/);
    assert.match(failed, /Failed to load the schema cache/);
  } finally {
    await Deno.remove(bin, { recursive: true });
  }
});

Deno.test("the seed: a demo user whose token works for the dashboard out of the box", async (t) => {
  await using db = await createTestDatabase();
  await resetDatabase(db.url, () => {});

  await t.step("reset applies every migration and the seed", async () => {
    const [user] = await db.sql`select id, email from auth.users`;
    assert.deepEqual({ ...user }, { id: DEMO_USER_ID, email: DEMO_USER_EMAIL });
    const members = await db.sql`
      select organization_id, user_id, role from public.organization_members`;
    assert.deepEqual(members.map((m) => ({ ...m })), [
      { organization_id: DEMO_ORGANIZATION_ID, user_id: DEMO_USER_ID, role: "owner" },
    ]);
    const applied = await db.sql<{ version: string }[]>`
      select version from supabase_migrations.schema_migrations order by version`;
    assert.deepEqual(
      applied.map((row) => row.version),
      (await listMigrations()).map((migration) => migration.version),
    );
  });

  await using server = await startServer(db.url);
  const token = await denoTaskJwt();

  await t.step("`deno task jwt` with no argument is the demo user", () => {
    const claims = decodeJwt(token);
    assert.equal(claims.sub, DEMO_USER_ID);
    assert.equal(claims.email, DEMO_USER_EMAIL);
  });

  const supabase = createClient(server.origin, ANON_KEY, {
    auth: NO_SESSION,
    accessToken: () => Promise.resolve(token),
  });

  await t.step(
    "the demo user creates a project and sees it, with no SQL typed by hand",
    async () => {
      const { data, error } = await supabase.functions.invoke("vm-api", {
        body: { action: "create", organization_id: DEMO_ORGANIZATION_ID, name: "demo" },
      });
      assert.equal(error, null);
      const projects = await supabase.from("projects").select("id,name");
      assert.deepEqual(projects.data, [{ id: data.data.project_id, name: "demo" }]);
      const message = await supabase.rpc("send_agent_message", {
        p_project_id: data.data.project_id,
        p_content: "Hello team",
      });
      assert.equal(message.error, null);
    },
  );

  await t.step("reset again starts from the seed alone", async () => {
    await resetDatabase(db.url, () => {});
    const [{ projects }] = await db.sql<
      [{ projects: number }]
    >`select count(*)::int as projects from public.projects`;
    assert.equal(projects, 0);
    const [{ users }] = await db.sql<
      [{ users: number }]
    >`select count(*)::int as users from auth.users`;
    assert.equal(users, 1);
  });

  await t.step("reset refuses a database on another machine", async () => {
    await assert.rejects(
      resetDatabase("postgres://postgres@db.example.com:5432/postgres", () => {}),
      /only a database on this machine is reset/,
    );
  });
});

function dataApiPid(output: string): number {
  const match = /Data API: PostgREST [\d.]+ \(pid (\d+)\)/.exec(output);
  assert.ok(match, `no Data API line in:\n${output}`);
  return Number(match[1]);
}

async function processExists(pid: number): Promise<boolean> {
  try {
    const stat = await Deno.readTextFile(`/proc/${pid}/stat`);
    return !/^\d+ \([^)]*\) Z/.test(stat); // a zombie has exited already
  } catch {
    return false;
  }
}

async function denoTaskJwt(): Promise<string> {
  const result = await new Deno.Command(Deno.execPath(), {
    args: ["task", "-q", "jwt"],
    cwd: new URL("../../", import.meta.url).pathname,
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.ok(result.success, new TextDecoder().decode(result.stderr));
  return new TextDecoder().decode(result.stdout).trim();
}
