/**
 * The emails and Slack messages of contract §13, as pure functions: what each says, the links it
 * carries (personal ones only when given), HTML escaped, and Block Kit that Slack's rules accept
 * for every event type, within its limits whatever an agent wrote.
 */
import assert from "node:assert/strict";
import {
  composeEmail,
  dashboardUrl,
} from "../../supabase/functions/_shared/notifications/compose.ts";
import {
  approvalLinkUrl,
  looksLikeApprovalLinkToken,
  newApprovalLinkToken,
} from "../../supabase/functions/_shared/notifications/approval_link_token.ts";
import {
  redactSecret,
  redactSmtpUrl,
} from "../../supabase/functions/_shared/notifications/smtp.ts";
import { slackMessage } from "../../supabase/functions/_shared/webhooks/slack.ts";
import { smtpUrlProblem } from "../../supabase/functions/_shared/config.ts";
import { EMAIL_EVENT_TYPES } from "../../supabase/functions/_contract/notification_types.ts";
import { EVENT_TYPES } from "../../supabase/functions/_contract/event_types.ts";
import { slackMessageProblems } from "../helpers/slack_blocks.ts";

const SITE = "https://dash.example.com";
const ids = {
  organization_id: "00000000-0000-4000-8000-0000000000aa",
  project_id: "11111111-1111-4111-8111-111111111111",
};
const APPROVAL = {
  ...ids,
  approval_id: "22222222-2222-4222-8222-222222222222",
  agent: "builder",
  action: "git_force_push",
  description: "Rewrite <main> & push",
  risk: "high",
  expires_at: "2026-11-25T21:04:05.000Z",
};
const DATA: Record<string, Record<string, unknown>> = {
  "approval.requested": APPROVAL,
  "project.stuck": { ...ids, status: "starting", since: "2026-11-25T20:00:00.000Z" },
  "project.operation_failed": {
    ...ids,
    operation: "deallocate",
    error: "The region has no capacity for this VM size.",
  },
  "budget.threshold_reached": { ...ids, percent: 80, month_to_date_usd: 41.5, budget_usd: 50 },
  "budget.exceeded": { ...ids, month_to_date_usd: 50.25, budget_usd: 50 },
  "project.auto_stop_scheduled": {
    ...ids,
    stops_at: "2026-11-25T22:00:00.000Z",
    reason: "idle",
    idle_stop_minutes: 60,
    last_activity_at: "2026-11-25T21:00:00.000Z",
  },
};

Deno.test("an approval email has the recipient's links, the facts and the way to the dashboard", () => {
  const token = newApprovalLinkToken();
  const links = {
    approve: approvalLinkUrl(SITE, token.plaintext, "approved"),
    reject: approvalLinkUrl(SITE, token.plaintext, "rejected"),
  };
  const email = composeEmail({
    kind: "event",
    eventType: "approval.requested",
    data: APPROVAL,
    projectName: "Shop",
    siteUrl: SITE,
    links,
  });
  assert.equal(email.subject, "Approval needed: git_force_push (Shop)");
  assert.match(email.text, /^builder on project Shop asks for approval to git_force_push\./);
  assert.match(email.text, /Risk: high\. Expires: 2026-11-25 21:04 UTC/);
  assert.ok(email.text.includes(`Approve: ${links.approve}`));
  assert.ok(email.text.includes(`Reject: ${links.reject}`));
  assert.ok(email.text.includes(`${SITE}/#/${ids.organization_id}/notifications`));
  assert.ok(email.html.includes("Rewrite &lt;main&gt; &amp; push"), "HTML escaped");
  assert.ok(!email.html.includes("<main>"));
  assert.ok(email.html.includes(`href="${links.approve.replaceAll("&", "&amp;")}"`));
  assert.ok(
    email.text.includes(
      dashboardUrl(SITE, {
        org: ids.organization_id,
        project: ids.project_id,
        area: "Approvals",
        approval: APPROVAL.approval_id,
      }),
    ),
  );
  assert.equal(
    dashboardUrl(SITE, { org: "o", project: "p", area: "Approvals", approval: "a" }),
    `${SITE}/#/o/projects/p/approvals/a`,
  );
});

Deno.test("someone who may not decide gets no links, and is told who can", () => {
  const email = composeEmail({
    kind: "reminder",
    eventType: "approval.requested",
    data: APPROVAL,
    projectName: "Shop",
    siteUrl: SITE,
  });
  assert.equal(email.subject, "Reminder: approval still needed: git_force_push (Shop)");
  assert.doesNotMatch(email.text, /approval\?token=/);
  assert.match(email.text, /Only the project's members can decide it\./);
});

Deno.test("every emailed type says what happened and what to do, in text and HTML", () => {
  const expected: Record<string, [RegExp, RegExp]> = {
    "approval.requested": [/^Approval needed/, /asks for approval/],
    "project.stuck": [/^Project Shop is stuck starting$/, /contact support/],
    "project.operation_failed": [/^Could not stop the VM of Shop$/, /no capacity/],
    "budget.threshold_reached": [/used 80% of its monthly budget/, /\$41\.50 .* \$50\.00 budget/],
    "budget.exceeded": [/reached its monthly budget and was stopped/, /raises or removes/],
    "project.auto_stop_scheduled": [/stopped at 2026-11-25 22:00 UTC/, /Chat message/],
  };
  for (const type of EMAIL_EVENT_TYPES) {
    const email = composeEmail({
      kind: "event",
      eventType: type,
      data: DATA[type]!,
      projectName: "Shop",
      siteUrl: SITE,
    });
    assert.match(email.subject, expected[type]![0], type);
    assert.match(email.text, expected[type]![1], type);
    assert.match(email.html, /^<!doctype html>/);
    assert.ok(email.text.includes(`${SITE}/#/${ids.organization_id}/projects/${ids.project_id}/`));
  }
});

Deno.test("approval link tokens are 256 random bits, shaped to be recognised", () => {
  const a = newApprovalLinkToken();
  const b = newApprovalLinkToken();
  assert.match(a.plaintext, /^vma_[A-Za-z0-9_-]{43}$/);
  assert.ok(looksLikeApprovalLinkToken(a.plaintext));
  assert.ok(!looksLikeApprovalLinkToken(`${a.plaintext}x`));
  assert.notEqual(a.plaintext, b.plaintext);
  assert.match(a.hashHex, /^[0-9a-f]{64}$/);
  assert.ok(!a.hashHex.includes(a.plaintext));
});

Deno.test("SMTP_URL: smtp and smtps only; the password never printed", () => {
  assert.equal(smtpUrlProblem("smtps://u:p@smtp.example.com:465"), undefined);
  assert.equal(smtpUrlProblem("smtp://127.0.0.1:1025"), undefined);
  assert.equal(smtpUrlProblem("https://smtp.example.com"), "not smtp:// or smtps://");
  assert.equal(smtpUrlProblem("nonsense"), "not a URL");
  assert.equal(
    redactSmtpUrl("smtps://resend:re_S3cret@smtp.resend.com:465"),
    "smtps://resend:***@smtp.resend.com:465",
  );
  assert.equal(redactSecret("login re_S3cret failed", ["re_S3cret", ""]), "login *** failed");
});

Deno.test("every event type becomes Block Kit that Slack accepts", () => {
  for (const type of EVENT_TYPES) {
    const message = slackMessage({
      type,
      data: {
        ...ids,
        ...(DATA[type] ?? {}),
        previous_status: "stopped",
        status: "starting",
        decision: "approved",
        agent: "lead",
        content: "Done <here> & *there*",
      },
      projectName: "Shop & <Co>",
    }, SITE);
    assert.deepEqual(slackMessageProblems(message), [], type);
    assert.ok(!message.text.includes("<Co>"), `${type}: the name is escaped`);
  }
  const approval = slackMessage({
    type: "approval.requested",
    data: APPROVAL,
    projectName: "Shop",
  }, SITE);
  const actions = approval.blocks.find((b) => b.type === "actions");
  assert.ok(actions && actions.type === "actions");
  assert.equal(
    actions.elements[0]!.url,
    `${SITE}/#/${ids.organization_id}/projects/${ids.project_id}/approvals/${APPROVAL.approval_id}`,
  );
});

Deno.test("a huge description is clipped to Block Kit's limits, not refused by Slack", () => {
  const message = slackMessage({
    type: "approval.requested",
    data: { ...APPROVAL, description: "x".repeat(20_000), action: "a".repeat(500) },
    projectName: "p".repeat(300),
  }, SITE);
  assert.deepEqual(slackMessageProblems(message), []);
});

Deno.test("the validator refuses what Slack refuses", () => {
  assert.deepEqual(slackMessageProblems({ text: "t", blocks: [] }), [
    "payload: blocks must hold 1 to 50 blocks",
  ]);
  const problems = slackMessageProblems({
    text: "t",
    blocks: [
      { type: "section", text: { type: "mrkdwn", text: "" } },
      {
        type: "actions",
        elements: [
          { type: "button", text: { type: "mrkdwn", text: "b".repeat(76) }, action_id: "a" },
          { type: "button", text: { type: "plain_text", text: "ok" }, action_id: "a", url: "x" },
        ],
      },
      { type: "header", text: { type: "plain_text", text: "h" } },
    ],
  });
  assert.deepEqual(problems, [
    "blocks[0].text: text must be a non-empty string",
    "blocks[1].elements[0].text: type must be plain_text",
    "blocks[1].elements[0].text: text is over 75 characters",
    "blocks[1].elements[1]: action_id a is not unique",
    "blocks[1].elements[1]: url must be an absolute URL",
    "blocks[2]: block type header is not section or actions",
  ]);
});
