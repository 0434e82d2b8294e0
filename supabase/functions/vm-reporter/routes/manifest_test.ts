/**
 * POST /vm-reporter/manifest (contract §10), in process against the real database: the VM gets its
 * project's repository, its secrets opened, its environment (system_packages, check_command) and
 * the revision, which changes on every change (and
 * only then) and is what update_manifest carries; only its own project's, only with its token; the
 * request log has the call and never the answer; no value reaches a log line; without the key,
 * or with a key other than the one that sealed a secret, 503 secrets_unavailable.
 */
import assert from "node:assert/strict";
import type postgres from "postgres";
import { base64 } from "../../_shared/base64.ts";
import { inProcess } from "../../../../tests/helpers/in_process.ts";
import { ok, vmApi } from "../../../../tests/helpers/vm_api.ts";
import {
  assertError,
  assertUnauthorized,
  poll,
  reporter,
  setupProject,
} from "../../../../tests/helpers/vm_reporter.ts";
import { eventually } from "../../../../tests/helpers/vm_api.ts";
import type { Manifest } from "../../_contract/reporter.ts";

/** High enough that no step here is ever rate limited. */
const ENV = { VM_REPORTER_RATE_LIMIT: "100000", VM_API_RATE_LIMIT: "100000" };
/** Not a GitHub project here: the agents push (contract §16). */
const PUSH = {
  mode: "push",
  branch_prefix: "agents/",
  draft: false,
  review_rounds: 2,
  ci_fix_rounds: 3,
};
/** No system packages and no check_command (contract §20). */
const NO_ENVIRONMENT = { system_packages: [], check_command: null };
const TOKEN_VALUE = "ghp_manifestSecretValue_9876543210";
const API_KEY_VALUE = "sk-ant-manifest-ünïcödé-value";

const requestLog = (sql: postgres.Sql, projectId: string) =>
  sql<{ route: string; status_code: number; error_message: string | null; row: string }[]>`
    select route, status_code, error_message, l::text as row
    from public.vm_reporter_request_log l where project_id = ${projectId} order by created_at`;

Deno.test("/manifest answers the project's repository, secrets and revision", async (t) => {
  await using stack = await inProcess(ENV);
  const { sql } = stack.db;
  const api = vmApi(stack);
  const { projectId, token, userId } = await setupProject(sql);
  const vm = reporter(stack, projectId, token);
  const manifest = (): Promise<Manifest> => vm.ok("/manifest", {});
  const act = async (action: "update" | "set_secret" | "delete_secret", fields: object) =>
    ok(await api.act(userId, action, projectId, fields as Record<string, unknown>));

  await t.step("no repository and no secret: null, {}, revision 1", async () => {
    assert.deepEqual(await manifest(), {
      repository: null,
      secrets: {},
      revision: 1,
      budget: null,
      delivery: PUSH,
      environment: NO_ENVIRONMENT,
    });
  });

  await t.step("the repository and every secret, opened", async () => {
    await act("update", { repository_url: "https://github.com/acme/app.git" });
    await act("set_secret", { name: "GIT_TOKEN", value: TOKEN_VALUE });
    await act("set_secret", { name: "ANTHROPIC_API_KEY", value: API_KEY_VALUE });
    assert.deepEqual(await manifest(), {
      repository: { url: "https://github.com/acme/app.git", branch: "main" },
      secrets: { ANTHROPIC_API_KEY: API_KEY_VALUE, GIT_TOKEN: TOKEN_VALUE },
      revision: 4,
      budget: null,
      delivery: PUSH,
      environment: NO_ENVIRONMENT,
    });
  });

  await t.step("an empty body is taken as {}", async () => {
    assert.equal((await vm.ok("/manifest")).revision, 4);
  });

  await t.step(
    "update_manifest carries the revision the manifest answers, and no more",
    async () => {
      const commands = await poll(vm);
      assert.deepEqual(commands.map((c) => [c.type, c.payload]), [
        ["update_manifest", { revision: 4 }],
      ]);
    },
  );

  await t.step("the revision changes on every change, and only then", async () => {
    const changes: [string, () => Promise<unknown>][] = [
      ["branch", () => act("update", { repository_branch: "develop" })],
      ["secret replaced", () => act("set_secret", { name: "GIT_TOKEN", value: `${TOKEN_VALUE}2` })],
      ["secret deleted", () => act("delete_secret", { name: "ANTHROPIC_API_KEY" })],
      ["url", () => act("update", { repository_url: "git@github.com:acme/app.git" })],
      ["repository cleared", () => act("update", { repository_url: null })],
      ["budget set", () => act("update", { monthly_budget_usd: 25 })],
      ["draft pull requests", () => act("update", { draft_pull_requests: true })],
      ["branch prefix", () => act("update", { branch_prefix: "bots/" })],
      ["system packages", () => act("update", { system_packages: ["ripgrep", "libpq-dev"] })],
      ["check command", () => act("update", { check_command: "deno task test" })],
      ["check command cleared", () => act("update", { check_command: null })],
    ];
    let last = (await manifest()).revision;
    for (const [what, change] of changes) {
      await change();
      const next = await manifest();
      assert.ok(next.revision > last, `${what}: ${last} -> ${next.revision}`);
      last = next.revision;
    }
    await act("update", { name: "Renamed" });
    assert.equal((await manifest()).revision, last, "a rename is not a manifest change");
    await act("update", { system_packages: ["ripgrep", "libpq-dev"] });
    assert.equal((await manifest()).revision, last, "the same packages again change nothing");
    const { budget, ...rest } = await manifest();
    assert.deepEqual(rest, {
      repository: null,
      secrets: { GIT_TOKEN: `${TOKEN_VALUE}2` },
      revision: last,
      delivery: {
        mode: "push",
        branch_prefix: "bots/",
        draft: true,
        review_rounds: 2,
        ci_fix_rounds: 3,
      },
      environment: { system_packages: ["ripgrep", "libpq-dev"], check_command: null },
    });
    // What a session may spend: the budget and this UTC month's cost so far (§11a).
    assert.equal(budget?.monthly_usd, 25);
    assert.ok(typeof budget?.spent_usd === "number" && budget.spent_usd >= 0);
    assert.equal(budget?.month, new Date().toISOString().slice(0, 7));
    const commands = await poll(vm);
    assert.deepEqual(commands.map((c) => c.payload), [{ revision: last }]);
  });

  await t.step("a VM gets its own project's manifest only, and only with its token", async () => {
    const other = await setupProject(sql);
    const otherVm = reporter(stack, other.projectId, other.token);
    assert.deepEqual(await otherVm.ok("/manifest", {}), {
      repository: null,
      secrets: {},
      revision: 1,
      budget: null,
      delivery: PUSH,
      environment: NO_ENVIRONMENT,
    });
    assertUnauthorized(await vm.post("/manifest", {}, { token: other.token }));
    assertUnauthorized(await vm.post("/manifest", {}, { token: null }));
    assertUnauthorized(await vm.post("/manifest", {}, { token: `vmr_${"x".repeat(43)}` }));
  });

  await t.step("the request log has each call, and never the answer", async () => {
    const rows = await eventually(async () => {
      const found = (await requestLog(sql, projectId)).filter((r) => r.route === "/manifest");
      return found.length >= 10 ? found : undefined;
    });
    for (const row of rows) {
      assert.equal(row.error_message, row.status_code === 200 ? null : row.error_message);
      for (const value of [TOKEN_VALUE, API_KEY_VALUE]) assert.ok(!row.row.includes(value));
    }
    assert.ok(rows.some((r) => r.status_code === 200));
  });

  await t.step("no value reached a log line", () => {
    const output = stack.output();
    for (const value of [TOKEN_VALUE, API_KEY_VALUE]) assert.ok(!output.includes(value));
  });

  await t.step("a body that is not an object is 400, after authentication", async () => {
    assertError(await vm.post("/manifest", [1]), 400);
    assertUnauthorized(await vm.post("/manifest", [1], { token: null }));
  });

  await t.step("without the key: 503 while there are secrets to open", async () => {
    await using keyless = await inProcess(ENV, { db: stack.db });
    delete (keyless.services.config as { sealingKey?: Uint8Array }).sealingKey;
    const answer = await reporter(keyless, projectId, token).post("/manifest", {});
    assertError(
      answer,
      503,
      "Project secrets are not available on this service yet: an operator must set its key.",
    );
    assert.equal(answer.body.code, "secrets_unavailable");
    const other = await setupProject(sql);
    assert.equal(
      (await reporter(keyless, other.projectId, other.token).ok("/manifest")).revision,
      1,
    );
  });

  await t.step("with another key than the one that sealed it: 503 naming the secret", async () => {
    const otherKey = base64(crypto.getRandomValues(new Uint8Array(32)));
    await using rekeyed = await inProcess({ ...ENV, WEBHOOK_SECRET_KEY: otherKey }, {
      db: stack.db,
    });
    const answer = await reporter(rekeyed, projectId, token).post("/manifest", {});
    assertError(
      answer,
      503,
      "The project secret GIT_TOKEN cannot be opened with this service's key: set it again.",
    );
    assert.match(rekeyed.output(), /project secret GIT_TOKEN cannot be opened/);
    assert.ok(!rekeyed.output().includes(TOKEN_VALUE));
  });
});
