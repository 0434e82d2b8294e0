/**
 * Contract §10 through the real server (scripts/start.ts, a subprocess) on a real database: the
 * dashboard's calls over HTTP (vm-api create, status, update, set_secret, delete_secret; the
 * project_secrets read model through the Data API under RLS) and the VM's (/manifest,
 * /commands/poll). Then the rule that matters most, checked where it could break: a secret's value
 * is in no answer but the manifest, in no table of the database in any form (clear text, its bytes
 * as bytea, base64), in no request log row, no command, event or activity, and in no line the
 * server printed; a credential in a repository URL is refused and never echoed or stored.
 */
import assert from "node:assert/strict";
import type postgres from "postgres";
import { base64 } from "../../supabase/functions/_shared/base64.ts";
import { createTestDatabase } from "../helpers/database.ts";
import { dashboardClient } from "../helpers/dashboard.ts";
import {
  createOrganization,
  createProject,
  createUser,
  issueReporterToken,
} from "../helpers/fixtures.ts";
import { startServer } from "../helpers/server.ts";
import {
  type ApiAnswer,
  eventually,
  ok,
  type Project,
  refused,
  type StatusData,
  type Transition,
  vmApi,
} from "../helpers/vm_api.ts";
import { poll, reporter } from "../helpers/vm_reporter.ts";

/** Distinct enough that finding one anywhere can only mean it leaked. */
const SECRETS = {
  first: `ghp_FirstValue_${crypto.randomUUID()}`,
  current: `ghp_CurrentValue_${crypto.randomUUID()}`,
  apiKey: `sk-ant-ünï-${crypto.randomUUID()}`,
  deleted: `deleted-${crypto.randomUUID()}`,
};
const URL_CREDENTIAL = `tok_${crypto.randomUUID().replaceAll("-", "")}`;

/** Every form a value could take in a row's text: as it is, its UTF-8 as bytea, base64. */
function forms(value: string): string[] {
  const bytes = new TextEncoder().encode(value);
  const hex = Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  return [value, `\\x${hex}`, hex, base64(bytes)];
}

/** `schema.table` of every table (and partition) in the database whose rows' text holds `needle`. */
async function tablesHolding(sql: postgres.Sql, needle: string): Promise<string[]> {
  const tables = await sql<{ name: string }[]>`
    select format('%I.%I', n.nspname, c.relname) as name
    from pg_class c join pg_namespace n on n.oid = c.relnamespace
    where c.relkind in ('r', 'm')
      and n.nspname not in ('pg_catalog', 'information_schema')
      and n.nspname not like 'pg\\_toast%'
    order by 1`;
  assert.ok(tables.length > 40, `only ${tables.length} tables found`);
  const found: string[] = [];
  for (const { name } of tables) {
    const [{ hit }] = await sql.unsafe<[{ hit: boolean }]>(
      `select exists (select 1 from ${name} t where strpos(lower(t::text), lower($1)) > 0) as hit`,
      [needle],
    );
    if (hit) found.push(name);
  }
  return found;
}

Deno.test("repository, secrets and the manifest through the real server", async (t) => {
  await using db = await createTestDatabase();
  const { sql } = db;
  const owner = await createUser(sql);
  const member = await createUser(sql);
  const outsider = await createUser(sql);
  const org = await createOrganization(sql, [owner, member]);
  await createOrganization(sql, [outsider], "Elsewhere");
  // An active project whose VM is played by this test (a reporter token of its own).
  const projectId = await createProject(sql, org, [owner]);
  await sql`
    insert into public.project_members (project_id, user_id, role)
    values (${projectId}, ${member}, 'member')`;
  await using server = await startServer(db.url, {
    // VMs made through create never boot here, and settled projects are not drift-checked.
    LOCAL_VM_BOOT_MS: "600000",
    DRIFT_SETTLE_SECONDS: "3600",
    VM_API_RATE_LIMIT: "10000",
    VM_REPORTER_RATE_LIMIT: "10000",
  });
  const api = vmApi(server);
  const answers: ApiAnswer[] = [];
  const call = async (userId: string, body: Record<string, unknown>) => {
    const answer = await api.call(userId, body);
    answers.push(answer);
    return answer;
  };
  const machine = reporter(server, projectId, await issueReporterToken(sql, projectId));

  await t.step("create takes a repository; status returns it", async () => {
    const created = ok<Transition>(
      await call(owner, {
        action: "create",
        organization_id: org,
        name: "With repository",
        repository_url: "git@github.com:acme/app.git",
        repository_branch: "develop",
      }),
    );
    const { project } = ok<StatusData>(
      await call(owner, { action: "status", project_id: created.project_id }),
    );
    assert.equal(project.repository_url, "git@github.com:acme/app.git");
    assert.equal(project.repository_branch, "develop");
  });

  await t.step("the owner sets the repository; a plain member cannot", async () => {
    const { project } = ok<{ project: Project }>(
      await call(owner, {
        action: "update",
        project_id: projectId,
        repository_url: "https://github.com/acme/app.git",
        repository_branch: "main",
      }),
    );
    assert.equal(project.repository_url, "https://github.com/acme/app.git");
    refused(
      await call(member, { action: "update", project_id: projectId, repository_url: null }),
      403,
      "not_project_admin",
    );
  });

  await t.step("a credential in the URL is refused, and never echoed", async () => {
    const answer = await call(owner, {
      action: "update",
      project_id: projectId,
      repository_url: `https://x-access-token:${URL_CREDENTIAL}@github.com/acme/app.git`,
    });
    assert.match(refused(answer, 400, "invalid_request"), /project secret GIT_TOKEN/);
    assert.ok(!answer.text.includes(URL_CREDENTIAL));
  });

  await t.step("the owner sets, replaces and deletes secrets; a member cannot", async () => {
    const set = (name: string, value: string) =>
      call(owner, { action: "set_secret", project_id: projectId, name, value });
    assert.deepEqual(ok(await set("GIT_TOKEN", SECRETS.first)), {
      project_id: projectId,
      name: "GIT_TOKEN",
    });
    ok(await set("GIT_TOKEN", SECRETS.current));
    ok(await set("ANTHROPIC_API_KEY", SECRETS.apiKey));
    ok(await set("DELETE_ME", SECRETS.deleted));
    assert.deepEqual(
      ok(await call(owner, { action: "delete_secret", project_id: projectId, name: "DELETE_ME" })),
      { project_id: projectId, name: "DELETE_ME" },
    );
    refused(
      await call(member, {
        action: "set_secret",
        project_id: projectId,
        name: "GIT_TOKEN",
        value: "a member's",
      }),
      403,
      "not_project_admin",
    );
    refused(
      await call(owner, { action: "delete_secret", project_id: projectId, name: "DELETE_ME" }),
      404,
      "secret_not_found",
    );
  });

  await t.step("members read the names through the Data API; nobody else does", async () => {
    const asMember = await dashboardClient(server, member);
    const { data, error } = await asMember.from("project_secrets").select("*")
      .eq("project_id", projectId).order("name");
    assert.equal(error, null);
    assert.deepEqual(data!.map((row) => [row.name, Object.keys(row).sort()]), [
      ["ANTHROPIC_API_KEY", ["created_at", "name", "project_id", "updated_at"]],
      ["GIT_TOKEN", ["created_at", "name", "project_id", "updated_at"]],
    ]);
    const sealed = await asMember.from("project_secrets").select("value_sealed");
    assert.notEqual(sealed.error, null, "there is no value column to ask for");
    const stranger = await dashboardClient(server, outsider);
    assert.deepEqual((await stranger.from("project_secrets").select("*")).data, []);
    const anon = await dashboardClient(server);
    assert.deepEqual((await anon.from("project_secrets").select("*")).data ?? [], []);
  });

  let revision = 0;
  await t.step("the VM's manifest: the repository, the current secrets, the revision", async () => {
    const manifest = await machine.ok("/manifest", {});
    assert.deepEqual(manifest.repository, {
      url: "https://github.com/acme/app.git",
      branch: "main",
    });
    assert.deepEqual(manifest.secrets, {
      ANTHROPIC_API_KEY: SECRETS.apiKey,
      GIT_TOKEN: SECRETS.current,
    });
    // 1, then the repository, then five secret changes (three set, one replaced, one deleted).
    assert.equal(manifest.revision, 7);
    revision = manifest.revision;
  });

  await t.step("update_manifest is queued once, with the revision alone", async () => {
    const commands = await poll(machine);
    assert.deepEqual(commands.map((c) => [c.type, c.payload]), [
      ["update_manifest", { revision }],
    ]);
  });

  await t.step("the request log has the manifest calls and never their answers", async () => {
    const rows = await eventually(async () => {
      const found = await sql<{ route: string; status_code: number; row: string }[]>`
        select route, status_code, l::text as row from public.vm_reporter_request_log l
        where project_id = ${projectId}`;
      return found.some((r) => r.route === "/manifest") &&
          found.some((r) => r.route === "/commands/poll")
        ? found
        : undefined;
    });
    assert.ok(rows.some((r) => r.route === "/manifest" && r.status_code === 200));
    for (const value of Object.values(SECRETS)) {
      assert.ok(rows.every((r) => !r.row.includes(value)));
    }
  });

  await t.step("no answer but the manifest carried a value", () => {
    assert.ok(answers.length >= 12);
    for (const answer of answers) {
      for (const value of Object.values(SECRETS)) assert.ok(!answer.text.includes(value));
      assert.ok(!answer.text.includes(URL_CREDENTIAL));
    }
  });

  await t.step("no table holds a value (or the URL's credential) in any form", async () => {
    const needles = [...Object.values(SECRETS).flatMap(forms), URL_CREDENTIAL];
    for (const needle of needles) {
      assert.deepEqual(await tablesHolding(sql, needle), [], `found ${needle}`);
    }
    // The scan does find what is there: the repository URL, the secret names.
    assert.ok((await tablesHolding(sql, "https://github.com/acme/app.git")).length > 0);
    assert.ok(
      (await tablesHolding(sql, "ANTHROPIC_API_KEY")).includes("private.project_secret_values"),
    );
  });

  await t.step("no line the server printed holds a value or the credential", async () => {
    await server.stop();
    const output = server.output();
    assert.ok(output.includes("vm-api request"), "the server did log the requests");
    for (const needle of [...Object.values(SECRETS), URL_CREDENTIAL]) {
      assert.ok(!output.includes(needle), `the server log holds ${needle}`);
    }
  });
});
