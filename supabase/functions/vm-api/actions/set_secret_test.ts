/**
 * vm-api `set_secret` (contract §10), in process against the real database: an owner or admin sets
 * and replaces a secret; the answer is `{project_id, name}` and never the value; the database holds
 * it sealed with the functions' key (it opens with that key and is not the value); the activity
 * names it; the manifest's revision moves and update_manifest carries the revision alone; the
 * members read the name (with its times) through public.project_secrets, nobody else; the name and
 * value rules (a value of 65536 UTF-8 bytes at most); 403 for a member and a non-member; 401
 * without a valid token; 503 secrets_unavailable when the service has no key (hosted without
 * WEBHOOK_SECRET_KEY).
 */
import assert from "node:assert/strict";
import type postgres from "postgres";
import { decryptSecret } from "../../_shared/sealing.ts";
import { inProcess } from "../../../../tests/helpers/in_process.ts";
import {
  createOrganization,
  createProject,
  createUser,
} from "../../../../tests/helpers/fixtures.ts";
import {
  ACTION_ENV,
  activityRows,
  addProjectMembers,
  invalidAuthorizations,
  nonMembers,
  NOT_A_MEMBER,
  ok,
  refused,
  vmApi,
} from "../../../../tests/helpers/vm_api.ts";
import { asUser } from "../../../../tests/helpers/vm_reporter.ts";

const VALUE = "ghp_thisIsTheSecretValue_0123456789";

interface SecretRow {
  name: string;
  sealed: Uint8Array;
  created_at: Date;
  updated_at: Date;
}

const secretRows = (sql: postgres.Sql, projectId: string) =>
  sql<SecretRow[]>`
    select name, value_sealed as sealed, created_at, updated_at
    from private.project_secret_values where project_id = ${projectId} order by name`;

/** public.project_secrets as `userId` reads it through the Data API (RLS). */
const namesAs = (sql: postgres.Sql, userId: string, projectId: string) =>
  asUser(
    sql,
    userId,
    (tx) =>
      tx<{ project_id: string; name: string; created_at: Date; updated_at: Date }[]>`
      select * from public.project_secrets where project_id = ${projectId} order by name`,
  );

Deno.test("set_secret stores a project secret sealed, for its owners and admins", async (t) => {
  await using stack = await inProcess(ACTION_ENV);
  const { sql } = stack.db;
  const api = vmApi(stack);
  const owner = await createUser(sql);
  const org = await createOrganization(sql, [owner]);
  const projectId = await createProject(sql, org, [owner]);
  const setSecret = (userId: string, name: string, value: unknown) =>
    api.act(userId, "set_secret", projectId, { name, value });
  const key = stack.services.config.sealingKey!;

  await t.step("the answer is the project and the name, never the value", async () => {
    const answer = await setSecret(owner, "GIT_TOKEN", VALUE);
    assert.deepEqual(ok(answer), { project_id: projectId, name: "GIT_TOKEN" });
    assert.ok(!answer.text.includes(VALUE));
  });

  await t.step("the database holds it sealed with the functions' key", async () => {
    const [row] = await secretRows(sql, projectId);
    assert.equal(row?.name, "GIT_TOKEN");
    const text = new TextDecoder().decode(row!.sealed);
    assert.ok(!text.includes(VALUE), "the stored bytes are not the value");
    assert.equal(row!.sealed.byteLength, 12 + new TextEncoder().encode(VALUE).byteLength + 16);
    assert.equal(await decryptSecret(key, row!.sealed), VALUE, "it opens with the key");
  });

  await t.step("replacing it keeps one row, moves updated_at, seals anew", async () => {
    const [before] = await secretRows(sql, projectId);
    await new Promise((resolve) => setTimeout(resolve, 5));
    ok(await setSecret(owner, "GIT_TOKEN", `${VALUE}-2`));
    const rows = await secretRows(sql, projectId);
    assert.equal(rows.length, 1);
    assert.ok(rows[0]!.updated_at > before!.updated_at);
    assert.deepEqual(rows[0]!.created_at, before!.created_at);
    assert.equal(await decryptSecret(key, rows[0]!.sealed), `${VALUE}-2`);
  });

  await t.step(
    "the activity names the secret; update_manifest carries the revision only",
    async () => {
      assert.deepEqual(await activityRows(sql, projectId, "secret_set"), [
        { details: { name: "GIT_TOKEN" } },
        { details: { name: "GIT_TOKEN" } },
      ]);
      const commands = await sql<{ payload: unknown }[]>`
      select payload from public.vm_commands where project_id = ${projectId}`;
      assert.deepEqual(commands.map((c) => c.payload), [{ revision: 3 }]);
      const [{ revision }] = await sql<[{ revision: number }]>`
      select manifest_revision::int as revision from public.projects where id = ${projectId}`;
      assert.equal(revision, 3, "two changes after the first revision");
    },
  );

  await t.step("members read the names with their times; nobody else does", async () => {
    const member = await createUser(sql);
    await addProjectMembers(sql, projectId, [member]);
    for (const reader of [owner, member]) {
      const rows = await namesAs(sql, reader, projectId);
      assert.deepEqual(rows.map((r) => Object.keys(r).sort()), [[
        "created_at",
        "name",
        "project_id",
        "updated_at",
      ]]);
      assert.equal(rows[0]!.name, "GIT_TOKEN");
    }
    for (const [who, stranger] of await nonMembers(sql, org)) {
      assert.deepEqual([...await namesAs(sql, stranger, projectId)], [], who);
    }
  });

  await t.step("a project admin sets one; a plain member gets 403 not_project_admin", async () => {
    const admin = await createUser(sql);
    const member = await createUser(sql);
    await sql`
      insert into public.project_members (project_id, user_id, role)
      values (${projectId}, ${admin}, 'admin'), (${projectId}, ${member}, 'member')`;
    ok(await setSecret(admin, "ANTHROPIC_API_KEY", "sk-ant-admin"));
    assert.equal(
      refused(await setSecret(member, "OTHER", "x"), 403, "not_project_admin"),
      "Only the project's owners and admins can change its settings, repository and secrets",
    );
    assert.deepEqual((await secretRows(sql, projectId)).map((r) => r.name), [
      "ANTHROPIC_API_KEY",
      "GIT_TOKEN",
    ]);
  });

  await t.step("a non-member or an unknown project: 403 not_project_member", async () => {
    for (const [who, stranger] of await nonMembers(sql, org)) {
      const answer = await setSecret(stranger, "GIT_TOKEN", "mine");
      assert.deepEqual(answer.body, { error: NOT_A_MEMBER, code: "not_project_member" }, who);
    }
    const missing = await api.act(owner, "set_secret", crypto.randomUUID(), {
      name: "X",
      value: "y",
    });
    refused(missing, 403, "not_project_member");
    assert.equal(
      await decryptSecret(key, (await secretRows(sql, projectId))[1]!.sealed),
      `${VALUE}-2`,
    );
  });

  await t.step("without a valid token: 401", async () => {
    for (const [name, authorization] of await invalidAuthorizations(owner)) {
      const answer = await api.act(owner, "set_secret", projectId, { name: "X", value: "y" }, {
        authorization,
      });
      assert.equal(answer.status, 401, name);
    }
  });

  await t.step("names and values keep their rules; no value is ever echoed", async () => {
    const cases: [string, unknown, RegExp][] = [
      ["git_token", "v", /^name: must be 1 to 64 capital letters/],
      ["1TOKEN", "v", /^name: must be 1 to 64 capital letters/],
      ["A".repeat(65), "v", /^name: must be 1 to 64 capital letters/],
      ["GIT-TOKEN", "v", /^name: must be 1 to 64 capital letters/],
      ["EMPTY", "", /^value: must not be empty$/],
      ["NUMBER", 42, /^value: must be a string$/],
      ["BIG", "x".repeat(65_537), /^value: must be at most 65536 bytes \(UTF-8\)$/],
      // 32769 characters, 65538 bytes: the limit is in bytes.
      ["WIDE", "é".repeat(32_769), /^value: must be at most 65536 bytes \(UTF-8\)$/],
    ];
    for (const [name, value, message] of cases) {
      const answer = await setSecret(owner, name, value);
      assert.match(refused(answer, 400, "invalid_request"), message);
      if (typeof value === "string" && value.length > 8) assert.ok(!answer.text.includes(value));
    }
    const answer = await api.act(owner, "set_secret", projectId, { name: "X" });
    assert.equal(refused(answer, 400), "value: is required");
  });

  await t.step("the limits themselves are taken: 64 characters, 65536 bytes", async () => {
    ok(await setSecret(owner, `A${"_".repeat(63)}`, "é".repeat(32_768)));
    const rows = await secretRows(sql, projectId);
    const big = rows.find((r) => r.name.length === 64)!;
    assert.equal(await decryptSecret(key, big.sealed), "é".repeat(32_768));
  });

  await t.step("no value, sealed or not, reached a log line", () => {
    const output = stack.output();
    for (const value of [VALUE, `${VALUE}-2`, "sk-ant-admin"]) assert.ok(!output.includes(value));
  });

  await t.step("without a key (hosted, no WEBHOOK_SECRET_KEY): 503, nothing stored", async () => {
    await using keyless = await inProcess(ACTION_ENV, { db: stack.db });
    // As loadConfig leaves it for a hosted project without WEBHOOK_SECRET_KEY.
    delete (keyless.services.config as { sealingKey?: Uint8Array }).sealingKey;
    const answer = await vmApi(keyless).act(owner, "set_secret", projectId, {
      name: "LATER",
      value: "v",
    });
    assert.equal(answer.status, 503);
    assert.deepEqual({ error: answer.body.error, code: answer.body.code }, {
      error: "Project secrets are not available on this service yet: an operator must set its key.",
      code: "secrets_unavailable",
    });
    assert.ok(!(await secretRows(sql, projectId)).some((r) => r.name === "LATER"));
    assert.match(keyless.output(), /project secrets are off: WEBHOOK_SECRET_KEY is not set/);
  });
});
