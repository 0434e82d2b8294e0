/**
 * Events and outbound webhooks (contract §8) against the functions and a real database, with real
 * receivers on 127.0.0.1 verifying every delivery with the reference Standard Webhooks library:
 * who may manage endpoints, a whole project lifecycle as ordered events, approvals, retries under
 * the same webhook-id, 410, a rotation signing with both secrets, replay, the event-type filter,
 * one organization's events never reaching another's endpoint, the disable-after-hours rule, the
 * events read model under RLS, the secret at rest, and private targets refused.
 */
import assert from "node:assert/strict";
import type postgres from "postgres";
import { createUser, issueReporterToken } from "../helpers/fixtures.ts";
import { inProcess } from "../helpers/in_process.ts";
import { ACTION_ENV, eventually, ok, refused, vmApi } from "../helpers/vm_api.ts";
import { APPROVAL, asUser, decide, reporter } from "../helpers/vm_reporter.ts";
import { type Receiver, startReceiver } from "../helpers/webhook_receiver.ts";
import { createProject } from "../helpers/fixtures.ts";
import { findPostgresBin } from "../../local/database/postgres_cluster.ts";

const ENV = { ...ACTION_ENV, WEBHOOK_RETRY_SCHEDULE_SECONDS: "1,1,1,1" };

async function organization(sql: postgres.Sql, roles: Record<string, string>) {
  const [{ id }] = await sql<[{ id: string }]>`
    insert into public.organizations (name) values ('Webhooks') returning id`;
  for (const [user, role] of Object.entries(roles)) {
    await sql`insert into public.organization_members (organization_id, user_id, role)
      values (${id}, ${user}, ${role})`;
  }
  return id;
}

async function delivery(sql: postgres.Sql, endpointId: string, eventId: string) {
  const [row] = await sql<
    [{ status: string; attempts: number; last_status_code: number | null; last_error: string }]
  >`select status, attempts, last_status_code, last_error from public.webhook_deliveries
    where endpoint_id = ${endpointId} and event_id = ${eventId}`;
  return row;
}

async function endpoint(sql: postgres.Sql, endpointId: string) {
  const [row] = await sql<[{ enabled: boolean; disabled_reason: string | null }]>`
    select enabled, disabled_reason from public.webhook_endpoints where id = ${endpointId}`;
  return row;
}

Deno.test("events and webhooks, end to end", async (t) => {
  await using stack = await inProcess(ENV);
  const sql = stack.db.sql;
  const hooks = vmApi(stack, "webhooks");
  const vm = vmApi(stack);
  const [owner, admin, member, outsider] = await Promise.all(
    Array.from({ length: 4 }, () => createUser(sql)),
  ) as [string, string, string, string];
  const org = await organization(sql, { [owner]: "owner", [admin]: "admin", [member]: "member" });
  const otherOrg = await organization(sql, { [outsider]: "owner" });
  await using all = startReceiver();
  await using filtered = startReceiver();
  await using foreign = startReceiver();
  const started = new Date().toISOString();
  /** Runs the reconciler (which delivers what is due) until `done` says so. */
  const deliverUntil = <T>(done: () => Promise<T | undefined> | T | undefined) =>
    eventually(async () => {
      await stack.reconcile();
      return await done();
    }, { timeoutMs: 20_000, intervalMs: 200 });
  const create = async (user: string, organizationId: string, receiver: Receiver, extra = {}) => {
    const answer = ok<{ endpoint_id: string; secret: string }>(
      await hooks.call(user, {
        action: "create",
        organization_id: organizationId,
        url: receiver.url,
        ...extra,
      }),
    );
    receiver.secrets = [answer.secret];
    return answer;
  };

  let allEndpoint = "";
  let filteredEndpoint = "";
  let secret = "";

  await t.step("only the organization's owners and admins manage its endpoints", async () => {
    const answer = await hooks.call(member, {
      action: "create",
      organization_id: org,
      url: all.url,
    });
    assert.match(refused(answer, 403), /owners and admins/);
    assert.equal(
      refused(
        await hooks.call(outsider, {
          action: "create",
          organization_id: org,
          url: all.url,
        }),
        403,
      ).length > 0,
      true,
    );
    ({ endpoint_id: allEndpoint, secret } = await create(owner, org, all));
    assert.match(secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
    ({ endpoint_id: filteredEndpoint } = await create(admin, org, filtered, {
      event_types: ["approval.requested"],
      description: "approvals only",
    }));
    await create(outsider, otherOrg, foreign);
    refused(await hooks.call(member, { action: "test", endpoint_id: allEndpoint }), 403);
    refused(await hooks.call(outsider, { action: "delete", endpoint_id: allEndpoint }), 403);
    refused(
      await hooks.call(owner, {
        action: "create",
        organization_id: org,
        url: all.url,
        event_types: ["nope"],
      }),
      400,
    );
  });

  await t.step("the read models show endpoints to owners and admins, never a secret", async () => {
    const seen = (user: string) =>
      asUser(sql, user, (tx) => tx`select * from public.webhook_endpoints order by created_at`);
    const rows = await seen(admin);
    assert.equal(rows.length, 2);
    assert.deepEqual(Object.keys(rows[0]!).sort(), [
      "created_at",
      "description",
      "disabled_reason",
      "enabled",
      "event_types",
      "format",
      "id",
      "organization_id",
      "url",
    ]);
    assert.equal((await seen(member)).length, 0, "a plain member sees no endpoint");
    assert.equal((await seen(outsider)).length, 1, "another organization sees only its own");
  });

  let projectId = "";
  await t.step("a whole lifecycle yields its events, in order", async () => {
    projectId = ok<{ project_id: string }>(await vm.create(owner, org, { name: "Hooked" }))
      .project_id;
    const settle = async (status: string) =>
      await eventually(async () => {
        await stack.reconcile();
        const [p] = await sql`select status from public.projects where id = ${projectId}`;
        return (p?.status ?? "gone") === status || undefined;
      });
    await settle("active");
    ok(await vm.act(owner, "stop", projectId));
    await settle("stopped");
    ok(await vm.act(owner, "start", projectId));
    await settle("active");
    ok(await vm.act(owner, "delete", projectId, { force: true }));
    await settle("gone");
    await deliverUntil(() => all.ofType("project.deleted").length > 0 || undefined);

    const mine = all.deliveries.filter((d) => d.data.project_id === projectId)
      .sort((a, b) => a.timestamp.localeCompare(b.timestamp) || a.id.localeCompare(b.id));
    assert.equal(mine[0]!.type, "project.created");
    assert.deepEqual(mine[0]!.data, {
      organization_id: org,
      project_id: projectId,
      name: "Hooked",
      region: "australiaeast",
      vm_size: "Standard_D2s_v3",
      status: "provisioning",
    });
    assert.equal(mine.at(-1)!.type, "project.deleted");
    assert.deepEqual(
      mine.filter((d) => d.type === "project.status_changed")
        .map((d) => `${d.data.previous_status}→${d.data.status}`),
      [
        "provisioning→active",
        "active→stopping",
        "stopping→stopped",
        "stopped→starting",
        "starting→active",
        "active→deleting",
      ],
    );
    assert.equal(new Set(mine.map((d) => d.id)).size, mine.length, "each event once");
    assert.equal(all.unverified, 0);
    // The same events, in the same order, as the event log holds them.
    const logged = await sql<{ id: string }[]>`
      select id from public.events where project_id = ${projectId} order by id`;
    assert.deepEqual(logged.map((e) => e.id), mine.map((d) => d.id));
  });

  await t.step(
    "an approval requested and decided; the filter lets only what it names",
    async () => {
      const project = await createProject(sql, org, [owner]);
      const vmOf = reporter(stack, project, await issueReporterToken(sql, project));
      await vmOf.ok("/approvals", { ...APPROVAL, request_id: "deploy-1" });
      await vmOf.ok("/approvals", { ...APPROVAL, request_id: "deploy-1" }); // once per request_id
      const [{ id: approvalId }] = await sql<[{ id: string }]>`
      select id from public.approvals where project_id = ${project}`;
      await decide(sql, owner, approvalId, "approved", "go");
      await deliverUntil(() => all.ofType("approval.decided").length > 0 || undefined);
      const requested = all.ofType("approval.requested");
      assert.equal(requested.length, 1);
      assert.deepEqual(requested[0]!.data, {
        organization_id: org,
        project_id: project,
        approval_id: approvalId,
        agent: APPROVAL.agent,
        action: APPROVAL.action,
        description: APPROVAL.description,
        risk: "high",
        expires_at: requested[0]!.data.expires_at,
      });
      assert.deepEqual(all.ofType("approval.decided")[0]!.data, {
        organization_id: org,
        project_id: project,
        approval_id: approvalId,
        decision: "approved",
        decided_by: owner,
      });
      await deliverUntil(() => filtered.deliveries.length > 0 || undefined);
      assert.deepEqual(filtered.deliveries.map((d) => d.type), ["approval.requested"]);
    },
  );

  await t.step("another organization's endpoint never receives our events", () => {
    assert.equal(foreign.deliveries.length, 0);
  });

  await t.step("a receiver failing twice is retried under the same webhook-id", async () => {
    filtered.answer = (d) => (d.type === "webhook.test" && d.arrival <= 2 ? 500 : 204);
    const { event_id } = ok<{ event_id: string }>(
      await hooks.call(admin, { action: "test", endpoint_id: filteredEndpoint }),
    );
    const row = await deliverUntil(async () => {
      const r = await delivery(sql, filteredEndpoint, event_id);
      return r?.status === "succeeded" ? r : undefined;
    });
    assert.equal(row.attempts, 3);
    assert.deepEqual(filtered.ofType("webhook.test").map((d) => [d.id, d.arrival]), [
      [event_id, 1],
      [event_id, 2],
      [event_id, 3],
    ]);
    assert.equal(all.ofType("webhook.test").length, 0, "a test goes to its endpoint only");
  });

  await t.step("rotation: the old and the new secret both verify for the overlap", async () => {
    const rotated = ok<{ secret: string }>(
      await hooks.call(owner, { action: "rotate_secret", endpoint_id: allEndpoint }),
    );
    assert.notEqual(rotated.secret, secret);
    all.secrets = [secret, rotated.secret];
    const { event_id } = ok<{ event_id: string }>(
      await hooks.call(owner, { action: "test", endpoint_id: allEndpoint }),
    );
    const got = await deliverUntil(() => all.deliveries.find((d) => d.id === event_id));
    assert.deepEqual(got.verifiedWith, [secret, rotated.secret]);
    secret = rotated.secret;
  });

  await t.step("replay sends the events again under their own ids", async () => {
    const before = all.deliveries.length;
    const { queued } = ok<{ queued: number }>(
      await hooks.call(owner, { action: "replay", endpoint_id: allEndpoint, since: started }),
    );
    assert.ok(queued >= 10, `queued ${queued}`);
    await deliverUntil(() => all.deliveries.length >= before + queued || undefined);
    const created = all.ofType("project.created").filter((d) => d.data.project_id === projectId);
    assert.deepEqual(created.map((d) => d.arrival), [1, 2]);
    assert.equal(created[0]!.id, created[1]!.id);
  });

  await t.step("410 disables the endpoint at once", async () => {
    filtered.answer = () => 410;
    const { event_id } = ok<{ event_id: string }>(
      await hooks.call(owner, { action: "test", endpoint_id: filteredEndpoint }),
    );
    await deliverUntil(async () =>
      (await delivery(sql, filteredEndpoint, event_id))?.status === "failed" || undefined
    );
    assert.deepEqual(await endpoint(sql, filteredEndpoint), {
      enabled: false,
      disabled_reason: "The endpoint answered 410 Gone",
    });
    // Enabled again by a person, it takes deliveries again.
    ok(await hooks.call(owner, { action: "update", endpoint_id: filteredEndpoint, enabled: true }));
    assert.deepEqual(await endpoint(sql, filteredEndpoint), {
      enabled: true,
      disabled_reason: null,
    });
  });

  await t.step("an endpoint failing for WEBHOOK_DISABLE_AFTER_HOURS is disabled", async () => {
    filtered.answer = () => 503;
    await sql`update private.webhook_secrets set failing_since = now() - interval '121 hours'
      where endpoint_id = ${filteredEndpoint}`;
    const { event_id } = ok<{ event_id: string }>(
      await hooks.call(owner, { action: "test", endpoint_id: filteredEndpoint }),
    );
    await deliverUntil(async () =>
      (await endpoint(sql, filteredEndpoint))?.enabled === false || undefined
    );
    assert.equal(
      (await endpoint(sql, filteredEndpoint)).disabled_reason,
      "No successful delivery for 120 hours",
    );
    assert.equal((await delivery(sql, filteredEndpoint, event_id)).last_status_code, 503);
  });

  await t.step("the events read model: a project's events to its members only", async () => {
    const seen = (user: string) =>
      asUser(sql, user, (tx) =>
        tx<{ type: string; project_id: string | null }[]>`
        select type, project_id from public.events`);
    const ownerSees = await seen(owner);
    assert.ok(ownerSees.some((e) => e.type === "approval.requested"), "a project member sees it");
    assert.ok(ownerSees.some((e) => e.type === "project.deleted"));
    // A member of the organization who is not a project's member sees the organization's own
    // events and that a project was deleted, not what happened inside projects.
    const memberSees = await seen(member);
    assert.ok(memberSees.length > 0);
    assert.ok(memberSees.every((e) => e.project_id === null || e.type === "project.deleted"));
    const outsiderSees = await seen(outsider);
    assert.ok(outsiderSees.every((e) => e.project_id === null), "only its own organization's");
    assert.equal(
      (await asUser(
        sql,
        outsider,
        (tx) => tx`select 1 from public.events where organization_id = ${org}`,
      )).length,
      0,
    );
  });

  await t.step("the secret is nowhere at rest, nor in the log", async () => {
    const dump = await new Deno.Command(`${await findPostgresBin()}/pg_dump`, {
      args: ["--data-only", stack.db.url],
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.ok(dump.success, new TextDecoder().decode(dump.stderr));
    const text = new TextDecoder().decode(dump.stdout);
    assert.ok(text.includes("webhook_secrets"), "the dump holds the secrets' table");
    for (const plaintext of [secret, secret.slice("whsec_".length)]) {
      assert.ok(!text.includes(plaintext), "a secret in the database");
      assert.ok(!stack.output().includes(plaintext), "a secret in the log");
    }
  });
});

Deno.test("private targets are refused unless WEBHOOK_ALLOW_PRIVATE_URLS", async (t) => {
  await using stack = await inProcess({ ...ENV, WEBHOOK_ALLOW_PRIVATE_URLS: "false" });
  const sql = stack.db.sql;
  const hooks = vmApi(stack, "webhooks");
  const owner = await createUser(sql);
  const org = await organization(sql, { [owner]: "owner" });
  await using receiver = startReceiver();
  const port = new URL(receiver.url).port;

  await t.step("http, and private address literals, are refused at once", async () => {
    for (
      const [url, message] of [
        [receiver.url, "url: must be an https URL"],
        [`https://127.0.0.1:${port}/hook`, "url: must not point at a private"],
        [`https://[::1]:${port}/hook`, "url: must not point at a private"],
        [`https://[::ffff:127.0.0.1]:${port}/hook`, "url: must not point at a private"],
        [`https://169.254.169.254/latest/meta-data`, "url: must not point at a private"],
        [`https://user:pass@example.com/hook`, "url: must not carry credentials"],
      ]
    ) {
      const answer = await hooks.call(owner, { action: "create", organization_id: org, url });
      assert.ok(refused(answer, 400).startsWith(message!), `${url}: ${answer.text}`);
    }
  });

  await t.step("a name that resolves to 127.0.0.1 is refused at delivery", async () => {
    const { endpoint_id, secret } = ok<{ endpoint_id: string; secret: string }>(
      await hooks.call(owner, {
        action: "create",
        organization_id: org,
        url: `https://localhost:${port}/hook`,
      }),
    );
    receiver.secrets = [secret];
    const { event_id } = ok<{ event_id: string }>(
      await hooks.call(owner, { action: "test", endpoint_id }),
    );
    const row = await eventually(async () => {
      await stack.reconcile();
      const r = await delivery(sql, endpoint_id, event_id);
      return r?.attempts && r.last_error ? r : undefined;
    });
    assert.match(row.last_error, /resolves to a private, loopback or link-local address/);
    assert.equal(row.last_status_code, null);
    assert.equal(receiver.deliveries.length + receiver.unverified, 0, "nothing reached it");
  });
});

Deno.test("through `deno task start`: a new project's events reach the receiver promptly", async () => {
  const { createTestDatabase } = await import("../helpers/database.ts");
  const { startServer } = await import("../helpers/server.ts");
  await using db = await createTestDatabase();
  await using server = await startServer(db.url, {
    LOCAL_VM_BOOT_MS: "300",
    LOCAL_AGENT_CYCLE_MS: "300",
    // The reconciler moves the project on (and delivers too); the reporter's and vm-api's own
    // sends go right after their requests. Either way, within seconds.
    RECONCILE_INTERVAL_MS: "200",
  });
  const owner = await createUser(db.sql);
  const org = await organization(db.sql, { [owner]: "owner" });
  await using receiver = startReceiver();
  const created = ok<{ secret: string }>(
    await vmApi(server, "webhooks").call(owner, {
      action: "create",
      organization_id: org,
      url: receiver.url,
      event_types: ["project.created", "project.status_changed", "project.health_changed"],
    }),
  );
  receiver.secrets = [created.secret];
  const { project_id } = ok<{ project_id: string }>(
    await vmApi(server).create(owner, org, { name: "Live" }),
  );
  // The team's first report: its agents are idle, as a team without work is (degraded).
  const healthy = await eventually(
    async () =>
      await receiver.deliveries.find((d) =>
        d.type === "project.health_changed" && d.data.project_id === project_id &&
        d.data.health === "degraded"
      ),
    // The whole suite runs beside it: a server start under load takes its time.
    { timeoutMs: 45_000 },
  );
  assert.equal(healthy.data.previous_health, "initializing");
  const types = receiver.deliveries.map((d) => d.type);
  assert.ok(types.includes("project.created"));
  assert.ok(
    receiver.deliveries.some((d) =>
      d.type === "project.status_changed" && d.data.status === "active"
    ),
  );
  assert.equal(receiver.unverified, 0);
  assert.ok(!server.output().includes(created.secret), "the secret in the server's log");
});
