/**
 * POST /functions/v1/github-webhooks (contract §16), in process against the real database: a
 * delivery without GitHub's signature changes nothing; a redelivery is answered 200 and ignored;
 * a delivery is recorded, answered 202 and acted on (the installations it tells of reach
 * `status`'s `project.github`); a payload of the wrong shape is recorded and answered 400; a
 * delivery about a repository no project names is recorded and ignored; what the handler did not
 * act on, the reconciler does.
 */
import assert from "node:assert/strict";
import { sign } from "@octokit/webhooks-methods";
import { inProcess, type InProcessStack } from "../../../tests/helpers/in_process.ts";
import { vmApi } from "../../../tests/helpers/vm_api.ts";
import { setupProject } from "../../../tests/helpers/vm_reporter.ts";

const SECRET = "github-webhook-secret-for-tests";
const WEB_URL = "https://github.example.test";
const TEST_KEY = "-----BEGIN RSA PRIVATE KEY-----\nnot used here\n-----END RSA PRIVATE KEY-----";
const ENV = {
  VM_API_RATE_LIMIT: "100000",
  GITHUB_WEBHOOK_SECRET: SECRET,
  GITHUB_WEB_URL: WEB_URL,
  GITHUB_APP_ID: "7",
  GITHUB_APP_SLUG: "agents",
  GITHUB_APP_PRIVATE_KEY: TEST_KEY,
};

interface Sent {
  event: string;
  payload: unknown;
  delivery?: string;
  signature?: string | null;
  body?: string;
}

async function deliver(stack: InProcessStack, sent: Sent): Promise<Response> {
  const body = sent.body ?? JSON.stringify(sent.payload);
  const signature = sent.signature === undefined ? await sign(SECRET, body) : sent.signature;
  const headers: Record<string, string> = {
    "content-type": "application/json",
    "x-github-event": sent.event,
    "x-github-delivery": sent.delivery ?? crypto.randomUUID(),
    "user-agent": "GitHub-Hookshot/test",
  };
  if (signature !== null) headers["x-hub-signature-256"] = signature;
  return await stack.fetch(
    new Request(stack.functionUrl("github-webhooks"), { method: "POST", headers, body }),
  );
}

const deliveries = (stack: InProcessStack) =>
  stack.db.sql<
    {
      id: string;
      event: string;
      action: string | null;
      repository: string | null;
      outcome: string | null;
      processed: boolean;
      attempts: number;
    }[]
  >`select id, event, action, repository, outcome, processed_at is not null as processed, attempts
    from private.github_webhook_deliveries order by received_at`;

const installationPayload = (action: string, id: number, repos: string[]) => ({
  action,
  installation: { id, account: { login: "acme" } },
  repositories: repos.map((name, i) => ({
    id: 100 + i,
    name,
    full_name: `acme/${name}`,
    private: true,
  })),
  sender: { login: "acme" },
});

/** Resolves once the handler's work after its answer is done. */
const settled = (stack: InProcessStack) => stack.services.background.settled();

Deno.test("github-webhooks refuses a delivery without GitHub's signature and records nothing", async (t) => {
  await using stack = await inProcess(ENV);
  const payload = installationPayload("created", 1, ["app"]);
  for (
    const [name, signature] of [
      ["no signature", null],
      ["a signature with another secret", await sign("another secret", JSON.stringify(payload))],
      ["a signature of another body", await sign(SECRET, "{}")],
      ["a malformed signature", "sha1=abc"],
    ] as const
  ) {
    await t.step(name, async () => {
      const response = await deliver(stack, { event: "installation", payload, signature });
      assert.equal(response.status, 401);
      assert.equal((await response.json()).code, "invalid_github_signature");
    });
  }
  await settled(stack);
  assert.equal((await deliveries(stack)).length, 0);
  const [{ count }] = await stack.db.sql<[{ count: number }]>`
    select count(*)::int as count from private.github_installations`;
  assert.equal(count, 0);
});

Deno.test("github-webhooks records a delivery, answers 202 and acts on it once", async (t) => {
  await using stack = await inProcess(ENV);
  const api = vmApi(stack);
  const { projectId, userId } = await setupProject(stack.db.sql);
  // Named by SQL, as before contract §18: unverified (vm-api would ask the person's GitHub).
  await stack.db.sql`update public.projects set repository_url = ${`${WEB_URL}/acme/app.git`}
    where id = ${projectId}`;
  const github = async () => (await api.status(userId, projectId)).project.github;

  await t.step("status: a GitHub project, the App not installed, unverified", async () => {
    const { unverified_reason, ...rest } = (await github())!;
    assert.deepEqual(rest, {
      owner: "acme",
      repo: "app",
      installed: false,
      install_url: `${WEB_URL}/apps/agents/installations/new`,
      verified: false,
      verified_by: null,
      verified_at: null,
    });
    assert.match(unverified_reason ?? "", /The GitHub App is not installed on acme\/app/);
  });

  const delivery = crypto.randomUUID();
  await t.step("installation.created: 202, recorded, then applied", async () => {
    const response = await deliver(stack, {
      event: "installation",
      delivery,
      payload: installationPayload("created", 42, ["app", "tools"]),
    });
    assert.equal(response.status, 202);
    assert.deepEqual((await response.json()).data, {
      delivery,
      event: "installation",
      action: "created",
      duplicate: false,
    });
    await settled(stack);
    assert.deepEqual(
      (await deliveries(stack)).map((d) => [d.id, d.event, d.action, d.outcome, d.processed]),
      [[delivery, "installation", "created", "applied", true]],
    );
    assert.equal((await github())?.installed, true);
  });

  await t.step("the same X-GitHub-Delivery again: 200, ignored", async () => {
    const response = await deliver(stack, {
      event: "installation",
      delivery,
      payload: installationPayload("deleted", 42, ["app"]),
    });
    assert.equal(response.status, 200);
    assert.equal((await response.json()).data.duplicate, true);
    await settled(stack);
    assert.equal((await deliveries(stack)).length, 1);
    assert.equal((await github())?.installed, true, "the repeated delivery did nothing");
  });

  await t.step("the same body under another X-GitHub-Delivery: 200, ignored", async () => {
    const response = await deliver(stack, {
      event: "installation",
      delivery: crypto.randomUUID(),
      payload: installationPayload("created", 42, ["app", "tools"]),
    });
    assert.equal(response.status, 200);
    assert.equal((await response.json()).data.duplicate, true);
    await settled(stack);
    assert.equal((await deliveries(stack)).length, 1, "a replayed body is acted on once");
  });

  await t.step(
    "installation_repositories.removed: the repository is no longer installed",
    async () => {
      const response = await deliver(stack, {
        event: "installation_repositories",
        payload: {
          action: "removed",
          installation: { id: 42, account: { login: "acme" } },
          repository_selection: "selected",
          repositories_added: [],
          repositories_removed: [{ id: 100, name: "app", full_name: "acme/app", private: true }],
        },
      });
      assert.equal(response.status, 202);
      await settled(stack);
      assert.equal((await github())?.installed, false);
    },
  );

  await t.step("installation_repositories.added: installed again", async () => {
    await deliver(stack, {
      event: "installation_repositories",
      payload: {
        action: "added",
        installation: { id: 42, account: { login: "acme" } },
        repository_selection: "selected",
        repositories_added: [{ id: 100, name: "app", full_name: "Acme/App", private: true }],
        repositories_removed: [],
      },
    });
    await settled(stack);
    assert.equal((await github())?.installed, true, "GitHub's names are case-blind");
  });

  await t.step("installation.deleted: status says installed false", async () => {
    const response = await deliver(stack, {
      event: "installation",
      payload: installationPayload("deleted", 42, ["app", "tools"]),
    });
    assert.equal(response.status, 202);
    await settled(stack);
    assert.equal((await github())?.installed, false);
    const [{ count }] = await stack.db.sql<[{ count: number }]>`
      select count(*)::int as count from private.github_installation_repositories`;
    assert.equal(count, 0);
  });
});

Deno.test("github-webhooks records a payload of the wrong shape and answers 400", async () => {
  await using stack = await inProcess(ENV);
  const missingInstallation = await deliver(stack, {
    event: "installation",
    payload: { action: "created", repositories: [] },
  });
  assert.equal(missingInstallation.status, 400);
  const body = await missingInstallation.json();
  assert.equal(body.code, "invalid_request");
  assert.match(body.error, /installation/);
  const notJson = await deliver(stack, { event: "push", payload: null, body: "not json" });
  assert.equal(notJson.status, 400);
  await settled(stack);
  assert.deepEqual(
    (await deliveries(stack)).map((d) => [d.event, d.outcome, d.processed]),
    [["installation", "invalid", true], ["push", "invalid", true]],
  );
});

Deno.test("github-webhooks records and ignores a delivery for a repository no project names", async () => {
  await using stack = await inProcess(ENV);
  const { projectId } = await setupProject(stack.db.sql);
  await stack.db.sql`update public.projects set repository_url = ${`${WEB_URL}/acme/app`}
    where id = ${projectId}`;
  const issue = (fullName: string) => ({
    action: "opened",
    issue: { number: 1, title: "Fix it" },
    repository: { id: 1, name: fullName.split("/")[1], full_name: fullName },
    installation: { id: 42 },
    sender: { login: "someone" },
  });
  assert.equal(
    (await deliver(stack, { event: "issues", payload: issue("other/repo") })).status,
    202,
  );
  assert.equal((await deliver(stack, { event: "issues", payload: issue("acme/app") })).status, 202);
  assert.equal(
    (await deliver(stack, { event: "meta", payload: { action: "deleted" } })).status,
    202,
  );
  await settled(stack);
  assert.deepEqual(
    (await deliveries(stack)).map((d) => [d.event, d.repository, d.outcome]),
    [
      ["issues", "other/repo", "unknown_repository"],
      ["issues", "acme/app", "ignored"],
      ["meta", null, "ignored"],
    ],
  );
});

Deno.test("a delivery the handler did not act on is acted on by the reconciler", async () => {
  await using stack = await inProcess(ENV);
  // As if the isolate ended right after recording: the row is there, unprocessed.
  await stack.db.sql`select private.record_github_delivery(
    'crashed-1', 'installation', 'created', null, 5,
    ${stack.db.sql.json(installationPayload("created", 5, ["app"]) as never)}, null
  )`;
  const report = await stack.reconcile();
  assert.deepEqual(report.github_deliveries, { applied: 1 });
  const [row] = await deliveries(stack);
  assert.deepEqual([row?.outcome, row?.processed, row?.attempts], ["applied", true, 1]);
  const [{ installation }] = await stack.db.sql<[{ installation: string | null }]>`
    select private.github_installation_of('acme/app')::text as installation`;
  assert.equal(installation, "5");
  assert.deepEqual((await stack.reconcile()).github_deliveries, {}, "acted on once");
});

Deno.test("github-webhooks answers 503 without a webhook secret, 405 to other methods", async () => {
  await using stack = await inProcess({ ...ENV, GITHUB_WEBHOOK_SECRET: "" });
  const response = await deliver(stack, { event: "ping", payload: { zen: "Keep it simple." } });
  assert.equal(response.status, 503);
  assert.equal((await response.json()).code, "github_unavailable");
  await using configured = await inProcess(ENV);
  const get = await configured.fetch(new Request(configured.functionUrl("github-webhooks")));
  assert.equal(get.status, 405);
  await get.body?.cancel();
});
