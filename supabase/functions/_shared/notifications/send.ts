/**
 * Sends the emails that are due (contract §13): each claimed in the database with a lease (SKIP
 * LOCKED, so two senders never send the same attempt), composed for its recipient, given its
 * personal approval links (recorded, hashed, before the email leaves), sent through SMTP_URL and
 * its outcome recorded: sent, or retried on WEBHOOK_RETRY_SCHEDULE_SECONDS and failed after the
 * last. At least once: a sender that dies mid-attempt leaves a lease that runs out, and the email
 * is sent again (with new links; the earlier ones stay valid while the approval is pending).
 *
 * Runs right after a request that may have recorded an emailed event (`createMailSender().soon()`,
 * as background work) and on every reconciler run (vm-reconciler/notifications.ts).
 */
import type { Background } from "../background.ts";
import type { Config } from "../config.ts";
import type { Sql } from "../db.ts";
import { runLimited } from "../limited.ts";
import { describeError, type Logger } from "../log.ts";
import { approvalLinkUrl, newApprovalLinkToken } from "./approval_link_token.ts";
import { composeEmail } from "./compose.ts";
import { createMailer, type Mailer } from "./smtp.ts";

export interface MailDeps {
  sql: Sql;
  config: Pick<Config, "notifications" | "webhooks">;
  log: Logger;
}

export interface MailReport {
  sent: number;
  retrying: number;
  failed: number;
  /** Outcomes another sender recorded first (this one's lease had run out). */
  superseded: number;
}

type Outcome = keyof MailReport;

export function noMail(): MailReport {
  return { sent: 0, retrying: 0, failed: 0, superseded: 0 };
}

/** Emails claimed by one run, and sent at once (SMTP servers limit a client's connections). */
export const MAIL_LIMITS = { batch: 50, concurrency: 4 };

/** A send's own timeout; the lease outlasts it. */
const SEND_TIMEOUT_MS = 15_000;
const LEASE_SECONDS = Math.ceil(SEND_TIMEOUT_MS / 1000) * 3 + 30;

interface Claimed {
  email_id: string;
  kind: "event" | "reminder";
  event_type: string;
  email: string;
  project_id: string;
  project_name: string | null;
  approval_id: string | null;
  // deno-lint-ignore no-explicit-any
  data: Record<string, any>;
  may_decide: boolean;
  approval_pending: boolean;
  attempt: number;
}

const mailers = new Map<string, Mailer>();

/** One mailer per SMTP_URL and From, for the life of the process (or isolate). */
function mailerFor(config: MailDeps["config"]): Mailer | undefined {
  const { smtpUrl, from } = config.notifications;
  if (!smtpUrl) return undefined;
  const key = `${smtpUrl}\n${from}`;
  let mailer = mailers.get(key);
  if (!mailer) {
    mailer = createMailer(smtpUrl, from, { timeoutMs: SEND_TIMEOUT_MS });
    mailers.set(key, mailer);
  }
  return mailer;
}

export async function sendDueEmails(
  deps: MailDeps,
  limits = MAIL_LIMITS,
): Promise<MailReport> {
  const report = noMail();
  const mailer = mailerFor(deps.config);
  if (!mailer) return report;
  const claimed = await deps.sql<Claimed[]>`
    select * from private.claim_email_notifications(${limits.batch}, ${LEASE_SECONDS})`;
  if (claimed.length === 0) return report;

  // Links first, recorded before any email leaves: a link must work when its email arrives.
  const { siteUrl } = deps.config.notifications;
  const links = new Map<string, { approve: string; reject: string }>();
  const hashes: { email_id: string; token_hash: string }[] = [];
  for (const email of claimed) {
    if (email.event_type !== "approval.requested" || !email.may_decide) continue;
    if (!email.approval_pending) continue;
    const token = newApprovalLinkToken();
    hashes.push({ email_id: email.email_id, token_hash: token.hashHex });
    links.set(email.email_id, {
      approve: approvalLinkUrl(siteUrl, token.plaintext, "approved"),
      reject: approvalLinkUrl(siteUrl, token.plaintext, "rejected"),
    });
  }
  if (hashes.length > 0) {
    await deps.sql`select private.issue_approval_links(${deps.sql.json(hashes)})`;
  }

  await runLimited(
    claimed.map((email) => async () => {
      const outcome = await attempt(deps, mailer, email, links.get(email.email_id));
      report[outcome]++;
    }),
    limits.concurrency,
  );
  return report;
}

async function attempt(
  deps: MailDeps,
  mailer: Mailer,
  email: Claimed,
  links: { approve: string; reject: string } | undefined,
): Promise<Outcome> {
  let error: string | null = null;
  try {
    const composed = composeEmail({
      kind: email.kind,
      eventType: email.event_type,
      data: email.data,
      projectName: email.project_name,
      siteUrl: deps.config.notifications.siteUrl,
      ...(links ? { links } : {}),
    });
    await mailer.send({ to: email.email, ...composed });
  } catch (failure) {
    // smtp.ts keeps credentials out of its errors' messages.
    error = failure instanceof Error ? failure.message : String(failure);
  }
  const [{ outcome }] = await deps.sql<[{ outcome: Outcome }]>`
    select private.record_email_attempt(
      ${email.email_id}, ${email.attempt}, ${error},
      ${deps.config.webhooks.retryScheduleSeconds}::integer[]
    ) as outcome`;
  if (error) {
    deps.log.warn("email not sent", {
      email_id: email.email_id,
      event_type: email.event_type,
      attempt: email.attempt,
      outcome,
      error,
    });
  }
  return outcome;
}

export interface MailSender {
  /** Sends what is due soon, after the current request: one run at a time, coalesced. */
  soon(): void;
}

/** The shortest time between the starts of two runs one process makes on its own account. */
export const MAIL_SENDER_INTERVAL_MS = 250;

/**
 * Sending right after the requests that may have recorded an emailed event, as background work
 * the runtime waits for; runs are coalesced and at most every MAIL_SENDER_INTERVAL_MS, as the
 * webhook sender's are.
 */
export function createMailSender(deps: MailDeps & { background: Background }): MailSender {
  let state: "idle" | "scheduled" | "running" = "idle";
  let again = false;
  let lastStart = 0;
  const pause = () =>
    new Promise((resolve) =>
      setTimeout(resolve, Math.max(0, lastStart + MAIL_SENDER_INTERVAL_MS - Date.now()))
    );
  const run = async () => {
    try {
      do {
        await pause();
        state = "running";
        again = false;
        lastStart = Date.now();
        const report = await sendDueEmails(deps);
        again ||= report.sent + report.retrying + report.failed > 0;
      } while (again);
    } catch (error) {
      deps.log.warn("email run failed; the reconciler retries", describeError(error));
    } finally {
      state = "idle";
    }
  };
  return {
    soon() {
      if (!deps.config.notifications.smtpUrl) return;
      if (state === "running") again = true;
      if (state !== "idle") return;
      state = "scheduled";
      deps.background.run("email delivery", run);
    },
  };
}
