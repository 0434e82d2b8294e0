/**
 * An event as a Slack incoming-webhook message (contract §13, endpoints with `format: "slack"`):
 * `text` (the notification's fallback) and Block Kit `blocks`, `section`s in mrkdwn and, for an
 * approval request, an `actions` block whose button opens the approval in the dashboard. Kept
 * within Block Kit's limits: a section's text at most 3000 characters, a field's 2000, a button's
 * text 75, its URL 3000.
 */
import { dashboardUrl } from "../notifications/compose.ts";

export interface SlackEvent {
  type: string;
  // deno-lint-ignore no-explicit-any
  data: Record<string, any>;
  projectName: string | null;
}

type Text = { type: "mrkdwn" | "plain_text"; text: string; emoji?: boolean };
export type SlackBlock =
  | { type: "section"; text: Text; fields?: Text[] }
  | {
    type: "actions";
    elements: {
      type: "button";
      text: Text;
      url: string;
      action_id: string;
      style?: "primary" | "danger";
    }[];
  };

export interface SlackMessage {
  text: string;
  blocks: SlackBlock[];
}

const LIMITS = { section: 3000, field: 2000, button: 75, url: 3000, text: 4000 };

/** Slack's mrkdwn control characters, escaped as its documentation asks. */
export function escapeMrkdwn(text: string): string {
  return text.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");
}

const clip = (text: string, max: number) =>
  text.length <= max ? text : `${text.slice(0, max - 1)}…`;
const mrkdwn = (text: string, max = LIMITS.section): Text => ({
  type: "mrkdwn",
  text: clip(text, max),
});

export function slackMessage(event: SlackEvent, siteUrl: string): SlackMessage {
  const { data } = event;
  const project = escapeMrkdwn(event.projectName ?? "a deleted project");
  const e = (value: unknown) => escapeMrkdwn(String(value ?? ""));
  const projectLink = data.project_id
    ? `<${
      dashboardUrl(siteUrl, { org: data.organization_id, project: data.project_id })
    }|${project}>`
    : project;
  let headline: string;
  const blocks: SlackBlock[] = [];

  switch (event.type) {
    case "approval.requested": {
      headline = `Approval needed on ${project}: ${e(data.agent)} asks to ${e(data.action)}`;
      blocks.push(
        {
          type: "section",
          text: mrkdwn(
            `*Approval needed* on ${projectLink}\n*${e(data.agent)}* asks to *${e(data.action)}*`,
          ),
          fields: [
            mrkdwn(`*Risk*\n${e(data.risk)}`, LIMITS.field),
            mrkdwn(
              `*Expires*\n<!date^${unix(data.expires_at)}^{date_short_pretty} {time}|${
                e(data.expires_at)
              }>`,
              LIMITS.field,
            ),
          ],
        },
        { type: "section", text: mrkdwn(`>${e(data.description).replaceAll("\n", "\n>")}`) },
        {
          type: "actions",
          elements: [{
            type: "button",
            text: { type: "plain_text", text: "Open the approval", emoji: false },
            url: clip(
              dashboardUrl(siteUrl, {
                org: data.organization_id,
                project: data.project_id,
                area: "Approvals",
                approval: data.approval_id,
              }),
              LIMITS.url,
            ),
            action_id: "open_approval",
            style: "primary",
          }],
        },
      );
      break;
    }
    case "approval.decided":
      headline = `Approval ${e(data.decision)} on ${project}`;
      blocks.push({
        type: "section",
        text: mrkdwn(`An approval on ${projectLink} was *${e(data.decision)}*.`),
      });
      break;
    case "approval.expired":
      headline = `An approval on ${project} expired undecided`;
      blocks.push({
        type: "section",
        text: mrkdwn(`An approval on ${projectLink} *expired* undecided: the agent was told no.`),
      });
      break;
    case "project.stuck":
      headline = `${project} is stuck ${e(data.status)}`;
      blocks.push({
        type: "section",
        text: mrkdwn(
          `${projectLink} has been *${e(data.status)}* since ${
            e(data.since)
          }, longer than it should take.`,
        ),
      });
      break;
    case "project.operation_failed":
      headline = `${e(data.operation)} failed on ${project}`;
      blocks.push({
        type: "section",
        text: mrkdwn(`*${e(data.operation)}* failed on ${projectLink}: ${e(data.error)}`),
      });
      break;
    case "project.status_changed":
      headline = `${project}: ${e(data.previous_status)} → ${e(data.status)}`;
      blocks.push({
        type: "section",
        text: mrkdwn(`${projectLink}: ${e(data.previous_status)} → *${e(data.status)}*`),
      });
      break;
    case "project.health_changed":
      headline = `${project} is ${e(data.health)}`;
      blocks.push({
        type: "section",
        text: mrkdwn(`${projectLink}: health ${e(data.previous_health)} → *${e(data.health)}*`),
      });
      break;
    case "budget.threshold_reached":
    case "budget.exceeded":
      headline = event.type === "budget.exceeded"
        ? `${project} reached its monthly budget and was stopped`
        : `${project} has used ${e(data.percent)}% of its monthly budget`;
      blocks.push({
        type: "section",
        text: mrkdwn(
          `${headline.replace(project, projectLink)}: $${e(data.month_to_date_usd)} of ` +
            `$${e(data.budget_usd)} this month.`,
        ),
      });
      break;
    case "message.created":
      headline = `${e(data.agent)} on ${project}`;
      blocks.push({
        type: "section",
        text: mrkdwn(`*${e(data.agent)}* on ${projectLink}:\n${e(data.content)}`),
      });
      break;
    default: {
      const subject = data.project_id ? ` on ${project}` : "";
      headline = `${e(event.type)}${subject}`;
      blocks.push({
        type: "section",
        text: mrkdwn(`\`${e(event.type)}\`${data.project_id ? ` on ${projectLink}` : ""}`),
      });
    }
  }
  return { text: clip(headline, LIMITS.text), blocks };
}

function unix(iso: unknown): number {
  const at = typeof iso === "string" ? Date.parse(iso) : NaN;
  return Number.isNaN(at) ? 0 : Math.floor(at / 1000);
}
