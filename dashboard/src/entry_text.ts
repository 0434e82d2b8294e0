/**
 * One line a person reads for an activity or audit entry: the team's own entries (agent/team/)
 * name what happened — the commit pushed with its subject and lines, the files of a conflict,
 * what a session cost, why the platform stopped the project — instead of leaving it in a details
 * blob nobody opens. The platform's pull request events (contract §16) read the same way, with the
 * title when the caller knows it (the event itself carries the number, not the title).
 */
type Details = Record<string, unknown> | null | undefined;

const str = (v: unknown) => (typeof v === "string" ? v : "");
const num = (v: unknown) => (typeof v === "number" ? v : 0);
const files = (v: unknown) => (Array.isArray(v) ? v.map(String).join(", ") : "");

export function entryText(action: string, details: Details): string {
  const d = details ?? {};
  switch (action) {
    case "commit_pushed":
      if (!str(d.commit)) return action;
      return `pushed ${str(d.commit).slice(0, 7)} "${str(d.subject)}" to ${str(d.branch)} ` +
        `(+${num(d.lines_added)} −${num(d.lines_removed)})`;
    case "rebase_conflict":
      return `conflict with what others pushed to ${str(d.branch)}: ${files(d.files)}`;
    case "conflict_resolved":
      return `resolved the conflict in ${files(d.files)}`;
    case "conflict_unresolved":
      return `left conflict markers in ${files(d.files)}; trying again`;
    case "push_failed":
      return `push to ${str(d.branch)} failed: ${str(d.error)}`;
    case "session_started":
      return `session started (${str(d.model)})`;
    case "session_completed":
      return `session completed in ${num(d.turns)} turns, $${num(d.cost_usd).toFixed(4)}`;
    case "session_failed":
      return `session failed: ${str(d.error)}`;
    case "session_cut":
      return `session cut (${str(d.exit_status)})`;
    case "message_joined_session":
      return "took a chat message into its running session";
    // Contract §18: a line copied from untrusted text (an issue, a comment) is never work.
    case "handoff_refused":
      return `did not hand "${str(d.text)}" to ${str(d.to)}: it was copied from untrusted text`;
    // Cost control (contract §12): why the platform stopped or did not start the project.
    case "vm_stop_requested":
      return d.reason === "idle"
        ? `stop requested: idle for ${num(d.idle_stop_minutes)} minutes`
        : d.reason === "budget"
        ? `stop requested: the monthly budget of $${num(d.budget_usd).toFixed(2)} is reached`
        : d.reason === "schedule"
        ? `stop requested by the schedule (${str(d.timezone)})`
        : action;
    case "vm_start_requested":
      return d.reason === "schedule"
        ? `start requested by the schedule (${str(d.timezone)})`
        : action;
    case "vm_start_skipped":
      return `scheduled start skipped: ${str(d.message)}`;
    case "budget_exceeded":
      return `monthly budget reached: $${num(d.month_to_date_usd).toFixed(2)} of ` +
        `$${num(d.budget_usd).toFixed(2)}`;
    // Pull requests on GitHub (contract §16): the events' data, plus the title when known.
    case "pull_request.opened":
    case "pull_request.merged":
    case "pull_request.closed":
      return pullRequestText(action, d);
    default:
      return action;
  }
}

/** `opened pull request #12 “title” (builder)`, `pull request #12 “title” merged (builder)`, … */
function pullRequestText(action: string, d: Record<string, unknown>): string {
  if (typeof d.number !== "number") return action;
  const named = `pull request #${d.number}` + (str(d.title) ? ` “${str(d.title)}”` : "");
  const by = str(d.agent) ? ` (${str(d.agent)})` : "";
  switch (action) {
    case "pull_request.opened":
      return `opened ${named}${by}`;
    case "pull_request.merged":
      return `${named} merged${by}`;
    default:
      return `${named} closed without merging${by}`;
  }
}
