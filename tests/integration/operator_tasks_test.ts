import assert from "node:assert/strict";
import { hashSecret } from "../../supabase/functions/_shared/reporter_token.ts";
import { createTestDatabase } from "../helpers/database.ts";
import { createOrganization, createProject, createUser } from "../helpers/fixtures.ts";
import { startServer } from "../helpers/server.ts";

const ROOT = new URL("../../", import.meta.url).pathname;

async function task(name: string, args: string[], env: Record<string, string>) {
  const result = await new Deno.Command("deno", {
    args: ["task", "-q", name, ...args],
    cwd: ROOT,
    env,
    stdout: "piped",
    stderr: "piped",
  }).output();
  return {
    code: result.code,
    stdout: new TextDecoder().decode(result.stdout),
    stderr: new TextDecoder().decode(result.stderr),
  };
}

Deno.test("deno task reporter-token issues, rotates and revokes tokens", async (t) => {
  await using db = await createTestDatabase();
  const env = { DATABASE_URL: db.url };
  const project = await createProject(db.sql, await createOrganization(db.sql));
  const liveTokens = async () =>
    (await db.sql`
      select encode(token_hash, 'hex') as hash from private.reporter_tokens
      where project_id = ${project} and revoked_at is null
        and (expires_at is null or expires_at > now())`).map((r) => r.hash as string);
  const hex = (token: string) =>
    Array.from(hashSecret(token), (b) => b.toString(16).padStart(2, "0")).join("");

  let first = "";
  await t.step("prints a new token as the last stdout line and stores only its hash", async () => {
    const out = await task("reporter-token", [project], env);
    assert.equal(out.code, 0, out.stderr);
    first = out.stdout.trim().split("\n").at(-1)!;
    assert.match(first, /^vmr_[A-Za-z0-9_-]{43}$/);
    const stored = await liveTokens();
    assert.deepEqual(stored, [hex(first)]);
    const [{ leaks }] = await db.sql<[{ leaks: number }]>`
      select count(*)::int as leaks from private.reporter_tokens
      where encode(token_hash, 'escape') like ${"%" + first + "%"}`;
    assert.equal(leaks, 0);
  });

  await t.step("a second token overlaps with the first for the given hours", async () => {
    const out = await task("reporter-token", [project, "--overlap-hours", "1"], env);
    assert.equal(out.code, 0, out.stderr);
    assert.equal((await liveTokens()).length, 2);
    const [{ expires_in }] = await db.sql<[{ expires_in: number }]>`
      select extract(epoch from expires_at - now())::int as expires_in
      from private.reporter_tokens where token_hash = ${hashSecret(first)}`;
    assert.ok(expires_in > 3500 && expires_in <= 3600, `${expires_in}`);
  });

  await t.step("--revoke ends every token of the project at once", async () => {
    const out = await task("reporter-token", [project, "--revoke"], env);
    assert.equal(out.code, 0, out.stderr);
    assert.equal((await liveTokens()).length, 0);
  });

  await t.step("a malformed or unknown project is refused", async () => {
    assert.equal((await task("reporter-token", ["nope"], env)).code, 2);
    const unknown = await task("reporter-token", [crypto.randomUUID()], env);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /No project/);
  });
});

Deno.test("deno task jwt mints a token vm-api accepts for that user", async () => {
  await using db = await createTestDatabase();
  await using server = await startServer(db.url);
  const user = await createUser(db.sql);
  const project = await createProject(db.sql, await createOrganization(db.sql, [user]), [user]);
  const out = await task("jwt", [user], {});
  assert.equal(out.code, 0, out.stderr);
  const jwt = out.stdout.trim();
  const response = await fetch(server.functionUrl("vm-api"), {
    method: "POST",
    headers: { authorization: `Bearer ${jwt}`, "content-type": "application/json" },
    body: JSON.stringify({ action: "status", project_id: project }),
  });
  assert.equal(response.status, 200);
  assert.equal((await response.json()).data.project.id, project);
  assert.equal((await task("jwt", ["not-a-uuid"], {})).code, 2);
});

Deno.test("vm-reconciler runs only for a caller with its secret", async (t) => {
  await using db = await createTestDatabase();
  const secret = "s".repeat(40);
  await using server = await startServer(db.url, { RECONCILER_SECRET: secret });
  const call = (authorization?: string, method = "POST") =>
    fetch(server.functionUrl("vm-reconciler"), {
      method,
      headers: authorization ? { authorization } : {},
    });

  await t.step("no secret, a wrong one, or a different length: 401", async () => {
    for (const header of [undefined, `Bearer ${"t".repeat(40)}`, "Bearer short", secret]) {
      const response = await call(header);
      assert.equal(response.status, 401);
      assert.deepEqual(await response.json(), {
        error: "Missing or invalid reconciler secret",
        code: "invalid_reconciler_secret",
      });
    }
  });

  await t.step("GET is 405", async () => {
    const response = await call(`Bearer ${secret}`, "GET");
    assert.equal(response.status, 405);
    await response.body?.cancel();
  });

  await t.step("the right secret runs the reconciler and reports what it did", async () => {
    const response = await call(`Bearer ${secret}`);
    assert.equal(response.status, 200);
    const { data } = await response.json();
    assert.equal(typeof data.dispatched, "number");
    assert.equal(typeof data.stuck, "number");
    assert.deepEqual(Object.keys(data.reporter).sort(), ["approvals_expired", "commands_ended"]);
  });

  await t.step("without RECONCILER_SECRET configured every call is refused", async () => {
    await using open = await startServer(db.url);
    const response = await fetch(open.functionUrl("vm-reconciler"), {
      method: "POST",
      headers: { authorization: "Bearer " },
    });
    assert.equal(response.status, 401);
    await response.body?.cancel();
  });
});
