/**
 * The reconciler's notifications step (contract §13): queues the reminders of approvals still
 * pending after APPROVAL_REMINDER_MINUTES, sends the emails that are due (a few batches a run:
 * what is left waits for the next), and drops sent and failed emails past the event log's
 * retention. Without SMTP_URL nothing is sent, and what is queued waits for one.
 */
import type { Config } from "../_shared/config.ts";
import type { Sql } from "../_shared/db.ts";
import type { Logger } from "../_shared/log.ts";
import { type MailReport, noMail, sendDueEmails } from "../_shared/notifications/send.ts";

export interface NotificationsReport {
  reminders_queued: number;
  emails: MailReport;
  emails_dropped: number;
}

/** Email batches one run sends at most. */
const EMAIL_BATCHES_PER_RUN = 4;
/** Approvals reminded of in one run at most. */
const REMINDERS_PER_RUN = 100;

export async function notificationsRun(
  deps: {
    sql: Sql;
    config: Pick<Config, "notifications" | "webhooks" | "eventRetentionDays">;
    log: Logger;
  },
): Promise<NotificationsReport> {
  const { sql, config } = deps;
  const [{ queued }] = await sql<[{ queued: number }]>`
    select private.queue_approval_reminders(
      make_interval(mins => ${config.notifications.reminderMinutes}), ${REMINDERS_PER_RUN}
    ) as queued`;
  const emails = noMail();
  for (let batch = 0; batch < EMAIL_BATCHES_PER_RUN; batch++) {
    const report = await sendDueEmails(deps);
    for (const key of Object.keys(emails) as (keyof MailReport)[]) emails[key] += report[key];
    if (report.sent + report.retrying + report.failed + report.superseded === 0) break;
  }
  const [{ dropped }] = await sql<[{ dropped: number }]>`
    select private.prune_email_notifications(${config.eventRetentionDays}) as dropped`;
  return { reminders_queued: queued, emails, emails_dropped: dropped };
}
