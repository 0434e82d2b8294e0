/**
 * vm-api `delete_secret` (contract §10), in process against the real database: an owner or admin
 * deletes a secret (`{project_id, name}`, the activity names it, the manifest's revision moves and
 * update_manifest is queued); a secret the project lacks is 404 secret_not_found with a sentence;
 * a plain member is 403 not_project_admin and a non-member 403 not_project_member (the secret
 * stays); a malformed name is 400; 401 without a valid token.
 */
import assert from "node:assert/strict";
import type postgres from "postgres";
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
  ok,
  refused,
  vmApi,
} from "../../../../tests/helpers/vm_api.ts";

const names = async (sql: postgres.Sql, projectId: string) =>
  (await sql<{ name: string }[]>`
    select name from private.project_secret_values where project_id = ${projectId} order by name`)
    .map((r) => r.name);

Deno.test("delete_secret removes a project secret, for its owners and admins", async (t) => {
  await using stack = await inProcess(ACTION_ENV);
  const { sql } = stack.db;
  const api = vmApi(stack);
  const owner = await createUser(sql);
  const org = await createOrganization(sql, [owner]);
  const projectId = await createProject(sql, org, [owner]);
  const deleteSecret = (userId: string, name: unknown) =>
    api.act(userId, "delete_secret", projectId, { name });
  for (const name of ["GIT_TOKEN", "ANTHROPIC_API_KEY"]) {
    ok(await api.act(owner, "set_secret", projectId, { name, value: `value of ${name}` }));
  }

  await t.step("a plain member gets 403 not_project_admin; the secret stays", async () => {
    const member = await createUser(sql);
    await addProjectMembers(sql, projectId, [member]);
    refused(await deleteSecret(member, "GIT_TOKEN"), 403, "not_project_admin");
    assert.deepEqual(await names(sql, projectId), ["ANTHROPIC_API_KEY", "GIT_TOKEN"]);
  });

  await t.step("a non-member gets 403 not_project_member; the secret stays", async () => {
    for (const [who, stranger] of await nonMembers(sql, org)) {
      refused(await deleteSecret(stranger, "GIT_TOKEN"), 403, "not_project_member");
      assert.deepEqual(await names(sql, projectId), ["ANTHROPIC_API_KEY", "GIT_TOKEN"], who);
    }
  });

  await t.step("without a valid token: 401", async () => {
    for (const [name, authorization] of await invalidAuthorizations(owner)) {
      const answer = await api.act(owner, "delete_secret", projectId, { name: "GIT_TOKEN" }, {
        authorization,
      });
      assert.equal(answer.status, 401, name);
    }
  });

  await t.step("the owner deletes one: answered, recorded, sent to the VM", async () => {
    const [before] = await sql<[{ revision: number }]>`
      select manifest_revision::int as revision from public.projects where id = ${projectId}`;
    assert.deepEqual(ok(await deleteSecret(owner, "GIT_TOKEN")), {
      project_id: projectId,
      name: "GIT_TOKEN",
    });
    assert.deepEqual(await names(sql, projectId), ["ANTHROPIC_API_KEY"]);
    assert.deepEqual(await activityRows(sql, projectId, "secret_deleted"), [
      { details: { name: "GIT_TOKEN" } },
    ]);
    const commands = await sql<{ payload: unknown }[]>`
      select payload from public.vm_commands
      where project_id = ${projectId} and type = 'update_manifest'`;
    assert.deepEqual(commands.map((c) => c.payload), [{ revision: before.revision + 1 }]);
  });

  await t.step("deleting a secret the project lacks is 404 with a sentence", async () => {
    assert.equal(
      refused(await deleteSecret(owner, "GIT_TOKEN"), 404, "secret_not_found"),
      "This project has no secret named GIT_TOKEN",
    );
    assert.equal(
      refused(await deleteSecret(owner, "NEVER_SET"), 404, "secret_not_found"),
      "This project has no secret named NEVER_SET",
    );
  });

  await t.step("a project admin deletes one", async () => {
    const admin = await createUser(sql);
    await sql`
      insert into public.project_members (project_id, user_id, role)
      values (${projectId}, ${admin}, 'admin')`;
    ok(await deleteSecret(admin, "ANTHROPIC_API_KEY"));
    assert.deepEqual(await names(sql, projectId), []);
  });

  await t.step("a malformed name is 400 naming it", async () => {
    for (const name of ["git_token", "", 5, "A B"]) {
      assert.match(refused(await deleteSecret(owner, name), 400), /^name: must be/);
    }
  });
});
