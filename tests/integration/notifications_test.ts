/**
 * Notifications and deciding from anywhere (contract §13) against the real stack: `scripts/start.ts`
 * as a subprocess on a real database, an SMTP server on 127.0.0.1 as the mail provider (smtp-server
 * and mailparser), the VM asking through the real vm-reporter, people deciding through the real
 * approval-links function, the reconciler called as a scheduler calls it.
 *
 * One email per member who wants it, each with their own links; GET and HEAD of a link decide
 * nothing; the confirmation decides as that member and the VM gets the decision; a second use, an
 * expired approval's link and a removed member's link are refused with a sentence; no token and no
 * SMTP password anywhere in the database or the log; a failing mail server is retried until the
 * mail arrives; a reminder goes out once, to the owners and admins too (links only to those who may
 * decide); a Slack-format endpoint receives Block Kit that Slack accepts.
 */
import assert from "node:assert/strict";
import type postgres from "postgres";
import { findPostgresBin } from "../../local/database/postgres_cluster.ts";
import { createTestDatabase } from "../helpers/database.ts";
import { dashboardClient } from "../helpers/dashboard.ts";
import { createProject, createUser, issueReporterToken } from "../helpers/fixtures.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { slackMessageProblems } from "../helpers/slack_blocks.ts";
import { type CaughtEmail, startSmtpCatcher } from "../helpers/smtp_catcher.ts";
import { eventually, ok, vmApi } from "../helpers/vm_api.ts";
import { APPROVAL, reporter } from "../helpers/vm_reporter.ts";

const RECONCILER_SECRET = "n".repeat(48);
const SMTP_PASSWORD = "s3cret-smtp-pa55word";

const LINK = /\/approval\?token=(vma_[A-Za-z0-9_-]{43})&decision=(approved|rejected)/g;

/** The recipient's links in an email's text: one token, both decisions. */
function linksOf(email: CaughtEmail): { token: string; decisions: string[] } | undefined {
  const found = [...email.text.matchAll(LINK)];
  if (found.length === 0) return undefined;
  const tokens = new Set(found.map((m) => m[1]!));
  assert.equal(tokens.size, 1, "one token per email");
  return { token: found[0]![1]!, decisions: found.map((m) => m[2]!) };
}

async function organization(sql: postgres.Sql, roles: Record<string, string>) {
  const [{ id }] = await sql<[{ id: string }]>`
    insert into public.organizations (name) values ('Notified') returning id`;
  for (const [user, role] of Object.entries(roles)) {
    await sql`insert into public.organization_members (organization_id, user_id, role)
      values (${id}, ${user}, ${role})`;
  }
  return id;
}

Deno.test("email, approval links, reminders and Slack, end to end", async (t) => {
  await using db = await createTestDatabase();
  const sql = db.sql;
  await using smtp = await startSmtpCatcher({ user: "mailer", password: SMTP_PASSWORD });
  const [owner, quiet, colleague, leaver, admin] = await Promise.all(
    ["owner", "quiet", "colleague", "leaver", "admin"].map((name) =>
      createUser(sql, `${name}@example.test`)
    ),
  ) as [string, string, string, string, string];
  const org = await organization(sql, {
    [owner]: "owner",
    [quiet]: "member",
    [colleague]: "member",
    [leaver]: "member",
    [admin]: "admin",
  });
  const projectId = await createProject(sql, org, [owner, quiet, colleague, leaver], {
    name: "Shop",
  });
  const reporterToken = await issueReporterToken(sql, projectId);
  await using server = await startServer(db.url, {
    SMTP_URL: smtp.url,
    SMTP_FROM: "VM Service <notify@example.test>",
    WEBHOOK_RETRY_SCHEDULE_SECONDS: "1,1,1",
    RECONCILER_SECRET,
    // The test runs the reconciler itself, as a scheduler would: nothing here waits on a clock.
    RECONCILE_INTERVAL_MS: "3600000",
  });
  const vmOf = reporter(server, projectId, reporterToken);
  const linkUrl = `${server.origin}/functions/v1/approval-links`;
  const reconcile = async () => {
    const response = await fetch(`${server.origin}/functions/v1/vm-reconciler`, {
      method: "POST",
      headers: { authorization: `Bearer ${RECONCILER_SECRET}` },
    });
    assert.equal(response.status, 200, await response.clone().text());
    return (await response.json()).data;
  };
  const confirm = (token: string, decision: string, comment?: string) =>
    fetch(linkUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ token, decision, ...(comment ? { comment } : {}) }),
    });
  const ask = async (requestId: string, extra: Record<string, unknown> = {}) => {
    const { approval_id } = await vmOf.ok("/approvals", {
      ...APPROVAL,
      request_id: requestId,
      description: `${APPROVAL.description} (${requestId})`,
      ...extra,
    });
    return approval_id as string;
  };
  const emailsAbout = (requestId: string) =>
    smtp.emails.filter((e) => e.text.includes(`(${requestId})`));
  const tokens = new Map<string, string>();

  await t.step("a member turns approval emails off through the Data API", async () => {
    const client = await dashboardClient(server, quiet);
    const { data, error } = await client.rpc("set_notification_preferences", {
      p_email_event_types: ["project.stuck", "budget.exceeded", "project.stuck"],
    });
    assert.equal(error, null);
    assert.deepEqual(data, ["project.stuck", "budget.exceeded"]);
    const read = await client.from("notification_preferences").select("*");
    assert.deepEqual(read.data!.map((r) => [r.user_id, r.email_event_types]), [
      [quiet, ["project.stuck", "budget.exceeded"]],
    ]);
    const unknown = await client.rpc("set_notification_preferences", {
      p_email_event_types: ["message.created"],
    });
    assert.equal(unknown.error?.code, "22023");
    assert.match(unknown.error!.message, /message\.created is not emailed/);
  });

  let first = "";
  await t.step("an approval asked by the VM is one email per member who wants it", async () => {
    first = await ask("deploy-1");
    // Sent right after the request: the reconciler has not run.
    await eventually(() => Promise.resolve(emailsAbout("deploy-1").length >= 3 || undefined), {
      timeoutMs: 15_000,
    });
    const mail = emailsAbout("deploy-1");
    assert.deepEqual(
      mail.map((e) => e.to).sort(),
      ["colleague@example.test", "leaver@example.test", "owner@example.test"],
      "every member but the one who turned it off; the admin is no member of the project",
    );
    for (const email of mail) {
      assert.equal(email.from, "notify@example.test");
      assert.equal(email.user, "mailer", "sent as SMTP_URL's user");
      assert.equal(email.subject, "Approval needed: force_push (Shop)");
      assert.match(email.text, /alpha on project Shop asks for approval to force_push\./);
      assert.match(email.text, /Risk: high\. Expires: \d{4}-\d\d-\d\d \d\d:\d\d UTC/);
      assert.match(email.html, /<a href="[^"]*\/approval\?token=vma_[^"]*decision=approved[^"]*"/);
      assert.ok(email.text.includes(
        `${server.origin}/#/${org}/projects/${projectId}/approvals/${first}`,
      ));
      const links = linksOf(email)!;
      assert.deepEqual(links.decisions, ["approved", "rejected"]);
      tokens.set(email.to, links.token);
    }
    assert.equal(new Set(tokens.values()).size, 3, "each recipient has links of their own");
  });

  await t.step("following a link with GET or HEAD decides nothing", async () => {
    const token = tokens.get("colleague@example.test")!;
    const page = await fetch(`${server.origin}/approval?token=${token}&decision=approved`);
    assert.equal(page.status, 200);
    assert.match(await page.text(), /approval\.js/);
    const read = await fetch(`${linkUrl}?token=${token}`);
    assert.equal(read.status, 200);
    const { data } = await read.json();
    assert.deepEqual(
      { ...data, expires_at: undefined },
      {
        approval_id: first,
        project_id: projectId,
        project_name: "Shop",
        agent: "alpha",
        action: "force_push",
        description: `${APPROVAL.description} (deploy-1)`,
        risk: "high",
        status: "pending",
        expires_at: undefined,
      },
    );
    const head = await fetch(`${linkUrl}?token=${token}`, { method: "HEAD" });
    assert.equal(head.status, 200);
    assert.equal(await head.text(), "");
    const [approval] = await sql`select status from public.approvals where id = ${first}`;
    assert.equal(approval!.status, "pending");
    const [{ n }] = await sql<[{ n: number }]>`
      select count(*)::int as n from public.vm_commands
      where project_id = ${projectId} and type = 'approval_decision'`;
    assert.equal(n, 0, "no decision reached the VM");
  });

  await t.step("the confirmation decides as that member, and the VM is told", async () => {
    const answer = await confirm(tokens.get("colleague@example.test")!, "approved", "Go ahead");
    assert.equal(answer.status, 200);
    assert.deepEqual(await answer.json(), {
      success: true,
      data: { approval_id: first, status: "approved" },
    });
    const [approval] = await sql`
      select status, decided_by, decision_comment from public.approvals where id = ${first}`;
    assert.deepEqual(approval, {
      status: "approved",
      decided_by: colleague,
      decision_comment: "Go ahead",
    });
    const commands = await sql`
      select payload, created_by from public.vm_commands
      where project_id = ${projectId} and type = 'approval_decision'`;
    assert.equal(commands.length, 1);
    assert.equal(commands[0]!.created_by, colleague);
    assert.equal(commands[0]!.payload.decision, "approved");
    assert.equal(commands[0]!.payload.request_id, "deploy-1");
    const polled = await vmOf.ok("/commands/poll", {});
    assert.ok(
      polled.commands.some((c: { type: string; payload: { approval_id: string } }) =>
        c.type === "approval_decision" && c.payload.approval_id === first
      ),
      "the VM's next poll gets the decision",
    );
    const [event] = await sql`
      select data from public.events where type = 'approval.decided'
        and data ->> 'approval_id' = ${first}`;
    assert.equal(event!.data.decided_by, colleague);
  });

  await t.step("a second use and another member's link are refused with a sentence", async () => {
    const again = await confirm(tokens.get("colleague@example.test")!, "rejected");
    assert.equal(again.status, 410);
    const body = await again.json();
    assert.equal(body.code, "approval_link_gone");
    assert.match(body.error, /already approved by you on \d{4}-\d\d-\d\d \d\d:\d\d UTC/);
    const other = await fetch(`${linkUrl}?token=${tokens.get("owner@example.test")}`);
    assert.equal(other.status, 410);
    assert.match((await other.json()).error, /^This approval was already approved on /);
  });

  await t.step("an expired approval's link is refused, saying so", async () => {
    const id = await ask("deploy-2");
    await eventually(() => Promise.resolve(emailsAbout("deploy-2").length >= 3 || undefined));
    const token = linksOf(emailsAbout("deploy-2").find((e) => e.to === "owner@example.test")!)!
      .token;
    await sql`update public.approvals set expires_at = now() - interval '1 second'
      where id = ${id}`;
    const answer = await confirm(token, "approved");
    assert.equal(answer.status, 410);
    assert.match((await answer.json()).error, /^This approval expired on .* without a decision/);
    const [approval] = await sql`select status from public.approvals where id = ${id}`;
    assert.notEqual(approval!.status, "approved");
  });

  await t.step("a member removed meanwhile may no longer decide", async () => {
    const id = await ask("deploy-3");
    await eventually(() => Promise.resolve(emailsAbout("deploy-3").length >= 3 || undefined));
    const token = linksOf(emailsAbout("deploy-3").find((e) => e.to === "leaver@example.test")!)!
      .token;
    await sql`delete from public.project_members where project_id = ${projectId}
      and user_id = ${leaver}`;
    const answer = await confirm(token, "approved");
    assert.equal(answer.status, 403);
    assert.deepEqual(await answer.json(), {
      error: "You are no longer a member of this project, so this link cannot decide its approval",
      code: "approval_not_accessible",
    });
    const [approval] = await sql`select status from public.approvals where id = ${id}`;
    assert.equal(approval!.status, "pending");
  });

  await t.step("approval-links answers what is wrong with a request", async () => {
    const unknown = await confirm(`vma_${"A".repeat(43)}`, "approved");
    assert.equal(unknown.status, 404);
    assert.equal((await unknown.json()).code, "approval_link_not_found");
    const garbled = await fetch(`${linkUrl}?token=nope`);
    assert.equal(garbled.status, 404);
    const missing = await fetch(linkUrl);
    assert.equal(missing.status, 400);
    const badDecision = await confirm(tokens.get("owner@example.test")!, "maybe");
    assert.equal(badDecision.status, 400);
    assert.match((await badDecision.json()).error, /decision: must be approved or rejected/);
    const put = await fetch(linkUrl, { method: "PUT" });
    assert.equal(put.status, 405);
    assert.equal(put.headers.get("allow"), "GET, HEAD, POST, OPTIONS");
    await put.body?.cancel();
  });

  await t.step("a failing mail server is retried, and the mail arrives", async () => {
    smtp.failNext = 2;
    await ask("deploy-4");
    await eventually(async () => {
      if (smtp.refused < 2) return undefined;
      await reconcile();
      return emailsAbout("deploy-4").length >= 2 || undefined;
    }, { timeoutMs: 30_000, intervalMs: 500 });
    const mail = emailsAbout("deploy-4").map((e) => e.to).sort();
    assert.deepEqual(mail, ["colleague@example.test", "owner@example.test"]);
    assert.equal(smtp.refused, 2);
    const rows = await sql`
      select n.status, n.attempts from private.email_notifications n
      where n.approval_id = (select id from public.approvals where request_id = 'deploy-4')`;
    assert.ok(rows.every((r) => r.status === "sent"));
    assert.equal(rows.reduce((sum, r) => sum + r.attempts, 0), 4, "two emails, two retried");
  });

  await t.step("a reminder goes out once, to the owners and admins too", async () => {
    const id = await ask("deploy-5");
    await eventually(() => Promise.resolve(emailsAbout("deploy-5").length >= 2 || undefined));
    await sql`update public.approvals set created_at = now() - interval '16 minutes'
      where id = ${id}`;
    const report = await reconcile();
    assert.equal(report.notifications.reminders_queued, 3);
    await eventually(async () => {
      await reconcile();
      return emailsAbout("deploy-5").filter((e) => e.subject.startsWith("Reminder")).length >= 3 ||
        undefined;
    });
    await reconcile();
    const reminders = emailsAbout("deploy-5").filter((e) => e.subject.startsWith("Reminder"));
    assert.deepEqual(
      reminders.map((e) => e.to).sort(),
      ["admin@example.test", "colleague@example.test", "owner@example.test"],
    );
    assert.equal(reminders[0]!.subject, "Reminder: approval still needed: force_push (Shop)");
    for (const reminder of reminders) {
      if (reminder.to === "admin@example.test") {
        assert.equal(linksOf(reminder), undefined, "no links for who may not decide");
        assert.match(reminder.text, /Only the project's members can decide it\./);
      } else {
        const links = linksOf(reminder)!;
        const first = linksOf(
          emailsAbout("deploy-5").find((e) =>
            e.to === reminder.to && !e.subject.startsWith("Reminder")
          )!,
        )!;
        assert.notEqual(links.token, first.token, "a new link; the first still works");
      }
    }
  });

  await t.step("a Slack-format endpoint receives Block Kit that Slack accepts", async () => {
    const received: unknown[] = [];
    const slack = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (r) => {
      received.push(await r.json());
      return new Response("ok");
    });
    try {
      const hooks = vmApi(server, "webhooks");
      const { endpoint_id } = ok<{ endpoint_id: string }>(
        await hooks.call(owner, {
          action: "create",
          organization_id: org,
          url: `http://127.0.0.1:${slack.addr.port}/services/T000/B000/XXXX`,
          event_types: ["approval.requested", "approval.decided"],
          format: "slack",
        }),
      );
      const client = await dashboardClient(server, owner);
      const { data } = await client.from("webhook_endpoints").select("format")
        .eq("id", endpoint_id).single();
      assert.equal(data!.format, "slack");
      const id = await ask("deploy-6", { description: "Ship <it> & *now* (deploy-6)" });
      await eventually(() => Promise.resolve(received.length >= 1 || undefined));
      const message = received[0] as {
        text: string;
        blocks: { type: string; elements?: { url: string }[] }[];
      };
      assert.deepEqual(slackMessageProblems(message), []);
      assert.equal(message.text, "Approval needed on Shop: alpha asks to force_push");
      const actions = message.blocks.find((b) => b.type === "actions")!;
      assert.equal(
        actions.elements![0]!.url,
        `${server.origin}/#/${org}/projects/${projectId}/approvals/${id}`,
      );
      assert.ok(JSON.stringify(message).includes("Ship &lt;it&gt; &amp; *now*"), "escaped");
      const token = await eventually(() => {
        const email = emailsAbout("deploy-6").find((e) => e.to === "owner@example.test");
        return Promise.resolve(email ? linksOf(email)?.token : undefined);
      });
      assert.equal((await confirm(token, "rejected")).status, 200);
      await eventually(() => Promise.resolve(received.length >= 2 || undefined));
      assert.deepEqual(slackMessageProblems(received[1]), []);
      const [approval] = await sql`select status from public.approvals where id = ${id}`;
      assert.equal(approval!.status, "rejected");
      ok(await hooks.call(owner, { action: "update", endpoint_id, format: "standard" }));
      const back = await client.from("webhook_endpoints").select("format").eq("id", endpoint_id)
        .single();
      assert.equal(back.data!.format, "standard");
    } finally {
      await slack.shutdown();
    }
  });

  await t.step("no token and no SMTP password in the database or the log", async () => {
    await assertNowhere(server, db.url, [...tokens.values(), SMTP_PASSWORD]);
    const [{ n }] = await sql<[{ n: number }]>`
      select count(*)::int as n from private.approval_links`;
    assert.ok(n >= 9, "the links are there, as hashes");
  });
});

/** None of `secrets` in a data dump of the database nor in the server's log. */
async function assertNowhere(server: TestServer, databaseUrl: string, secrets: string[]) {
  const dump = await new Deno.Command(`${await findPostgresBin()}/pg_dump`, {
    args: ["--data-only", databaseUrl],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.ok(dump.success, new TextDecoder().decode(dump.stderr));
  const text = new TextDecoder().decode(dump.stdout);
  assert.ok(text.includes("approval_links"), "the dump holds the links' table");
  for (const secret of secrets) {
    assert.ok(!text.includes(secret), "a secret in the database");
    assert.ok(!server.output().includes(secret), "a secret in the log");
  }
}
