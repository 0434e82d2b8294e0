/**
 * The emails of contract §13, as plain text and HTML: short, saying what happened and what to do,
 * with a link to the place in the dashboard. An approval.requested email carries the recipient's
 * own Approve and Reject links when they may decide it; anyone else is told who can. Pure: the
 * sender gives it what it needs.
 */

export interface EmailInput {
  kind: "event" | "reminder";
  eventType: string;
  // deno-lint-ignore no-explicit-any
  data: Record<string, any>;
  /** The project's name now (null once it is deleted). */
  projectName: string | null;
  /** The dashboard's address, no trailing slash (SITE_URL). */
  siteUrl: string;
  /** The recipient's own links, when they may decide a still pending approval. */
  links?: { approve: string; reject: string };
}

export interface ComposedEmail {
  subject: string;
  text: string;
  html: string;
}

/** One paragraph: text with links, each shown as its label in HTML and as the URL in text. */
type Piece = string | { label: string; url: string; button?: "primary" | "secondary" };
type Paragraph = Piece[];

const OPERATIONS: Record<string, string> = {
  provision: "create",
  start: "start",
  deallocate: "stop",
  delete: "delete",
};

/**
 * The dashboard at a place, in its addresses (dashboard/src/address.ts, the URL's hash):
 * `#/<org>/projects/<project>/<area>[/<approval>]`, or `#/<org>/<view>` without a project.
 */
export function dashboardUrl(
  siteUrl: string,
  place: { org: string; project?: string; area?: string; approval?: string; view?: string },
): string {
  const path = place.project
    ? `projects/${place.project}/${(place.area ?? "Overview").toLowerCase()}` +
      (place.approval ? `/${place.approval}` : "")
    : place.view ?? "";
  return `${siteUrl}/#/${place.org}${path ? `/${path}` : ""}`;
}

export function composeEmail(input: EmailInput): ComposedEmail {
  const { data } = input;
  const project = input.projectName ?? "a deleted project";
  const open = (area?: string, label = "Open it in the dashboard") => ({
    label,
    url: dashboardUrl(input.siteUrl, {
      org: data.organization_id,
      project: data.project_id,
      ...(area ? { area } : {}),
      ...(area === "Approvals" && data.approval_id ? { approval: data.approval_id } : {}),
    }),
  });
  let subject: string;
  let body: Paragraph[];

  switch (input.eventType) {
    case "approval.requested": {
      const reminder = input.kind === "reminder";
      subject = `${reminder ? "Reminder: approval still needed" : "Approval needed"}: ` +
        `${data.action} (${project})`;
      body = [
        [
          reminder
            ? `${data.agent} on project ${project} is still waiting for approval to ${data.action}.`
            : `${data.agent} on project ${project} asks for approval to ${data.action}.`,
        ],
        [`Risk: ${data.risk}. Expires: ${when(data.expires_at)}; undecided, the agent is told no.`],
        [String(data.description ?? "")],
        input.links
          ? [
            { label: "Approve", url: input.links.approve, button: "primary" },
            " ",
            { label: "Reject", url: input.links.reject, button: "secondary" },
          ]
          : ["Only the project's members can decide it."],
        input.links
          ? [
            "Each link opens a page where you confirm; it decides nothing until you do, and " +
            "works only for you while the approval is pending. Or ",
            open("Approvals", "open it in the dashboard"),
            ".",
          ]
          : [open("Approvals"), "."],
      ];
      break;
    }
    case "project.stuck":
      subject = `Project ${project} is stuck ${data.status}`;
      body = [
        [`Project ${project} has been ${data.status} since ${
          when(data.since)
        }, longer than it should take.`],
        [
          "The platform keeps watching it. If it has not moved in a few minutes, contact " +
          `support with the project's id, ${data.project_id}.`,
        ],
        [open(), "."],
      ];
      break;
    case "project.operation_failed": {
      const verb = OPERATIONS[data.operation] ?? data.operation;
      subject = `Could not ${verb} the VM of ${project}`;
      body = [
        [`The platform gave up trying to ${verb} the VM of project ${project}: ${data.error}`],
        ["Fix what the message names if it is yours to fix, then try again from the project's page."],
        [open(), "."],
      ];
      break;
    }
    case "budget.threshold_reached":
      subject = `${project} has used ${data.percent}% of its monthly budget`;
      body = [
        [
          `Project ${project} has spent ${usd(data.month_to_date_usd)} this month, at least ` +
          `${data.percent}% of its ${usd(data.budget_usd)} budget.`,
        ],
        ["At the budget the platform stops it. To avoid that, an owner or admin raises the budget in Settings."],
        [open("Settings", "Open its Settings"), "."],
      ];
      break;
    case "budget.exceeded":
      subject = `${project} reached its monthly budget and was stopped`;
      body = [
        [
          `Project ${project} has spent ${usd(data.month_to_date_usd)} this month and reached ` +
          `its ${usd(data.budget_usd)} budget, so the platform stopped it.`,
        ],
        [
          "It cannot start again until an owner or admin raises or removes the budget in " +
          "Settings, or the month turns (UTC).",
        ],
        [open("Settings", "Open its Settings"), "."],
      ];
      break;
    case "project.auto_stop_scheduled":
      subject = `${project} will be stopped at ${when(data.stops_at)} for being idle`;
      body = [
        [
          `Project ${project} has had no activity` +
          (data.last_activity_at ? ` since ${when(data.last_activity_at)}` : "") +
          `, so the platform will stop it at ${when(data.stops_at)}.`,
        ],
        [
          "To keep it running, give its agents work before then (a Chat message does). To " +
          "change when idle projects stop, an owner or admin edits Idle stop in Settings.",
        ],
        [open(), "."],
      ];
      break;
    default:
      subject = `${input.eventType} (${project})`;
      body = [[`Project ${project}: ${input.eventType}.`], [open(), "."]];
  }

  const footer: Paragraph = [
    `You get this email as a member of project ${project} or of its organization. Choose which ` +
    "emails you get under ",
    {
      label: "Notifications",
      url: dashboardUrl(input.siteUrl, { org: data.organization_id, view: "notifications" }),
    },
    " in the dashboard.",
  ];
  return {
    subject: oneLine(subject),
    text: [...body, footer].map(asText).filter(Boolean).join("\n\n") + "\n",
    html: asHtml(subject, body, footer),
  };
}

function asText(paragraph: Paragraph): string {
  return paragraph.map((piece) =>
    typeof piece === "string" ? piece : piece.button ? `${piece.label}: ${piece.url}\n` : piece.url
  ).join("").trim();
}

function asHtml(subject: string, body: Paragraph[], footer: Paragraph): string {
  const paragraph = (pieces: Paragraph, style = "margin:0 0 14px") =>
    `<p style="${style}">` + pieces.map((piece) => {
      if (typeof piece === "string") return escapeHtml(piece);
      const look = piece.button
        ? "display:inline-block;padding:8px 18px;margin-right:8px;border-radius:6px;" +
          "border:1px solid #2f5bd3;text-decoration:none;font-weight:600;" +
          (piece.button === "primary"
            ? "background:#2f5bd3;color:#ffffff"
            : "background:#ffffff;color:#2f5bd3")
        : "color:#2f5bd3";
      return `<a href="${escapeHtml(piece.url)}" style="${look}">${escapeHtml(piece.label)}</a>`;
    }).join("") + "</p>";
  return [
    "<!doctype html>",
    `<html lang="en"><head><meta charset="utf-8"><title>${
      escapeHtml(oneLine(subject))
    }</title></head>`,
    '<body style="margin:0;padding:24px;background:#f4f6fa;font-family:system-ui,-apple-system,' +
    "'Segoe UI',Roboto,sans-serif;font-size:15px;line-height:1.45;color:#1d2330\">",
    '<div style="max-width:560px;margin:0 auto;background:#ffffff;border:1px solid #dde2ea;' +
    'border-radius:8px;padding:24px">',
    ...body.filter((p) => p.some((piece) => piece !== "")).map((p, index) =>
      paragraph(p, index === 0 ? "margin:0 0 14px;font-weight:600" : undefined)
    ),
    paragraph(footer, "margin:20px 0 0;font-size:13px;color:#5b6475"),
    "</div></body></html>",
  ].join("\n");
}

/** "2026-11-25 21:04 UTC" of an ISO 8601 instant (the text as it is when it is not one). */
function when(iso: unknown): string {
  const at = typeof iso === "string" ? new Date(iso) : undefined;
  if (!at || Number.isNaN(at.getTime())) return String(iso ?? "");
  return `${at.toISOString().slice(0, 16).replace("T", " ")} UTC`;
}

function usd(value: unknown): string {
  const number = Number(value);
  return Number.isFinite(number) ? `$${number.toFixed(2)}` : String(value);
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, " ").trim().slice(0, 200);
}

export function escapeHtml(text: string): string {
  return text.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;")
    .replaceAll('"', "&quot;").replaceAll("'", "&#39;");
}
