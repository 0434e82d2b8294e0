/**
 * Pull requests (contract §16): the pull requests the platform opened on GitHub for the agents'
 * branches (`pull_requests`, the project's members), newest first: the number linked to GitHub,
 * the title, the agent, the state (with the team's review, contract §21) and the checks as badges,
 * the sessions and what they cost.
 */
import type { MountArea } from "../area.ts";
import { type PullRequest, pullRequests } from "../data.ts";
import { badge, type Child, count, h, show, when } from "../ui.ts";

const HEADERS = [
  "Number",
  "Title",
  "Agent",
  "State",
  "Checks",
  "Sessions",
  "Cost",
  "Opened",
  "Updated",
];

/** What a person reads while there is none: how a pull request comes to be. */
export const NO_PULL_REQUEST = "No pull request yet. On a GitHub project with the GitHub App " +
  "installed (Settings, GitHub), each task the team takes on — a chat message to the team, or " +
  "an issue labelled for the agents — is delivered as a pull request, listed here.";

/** The number, linked to the pull request on GitHub (a new tab); plain text for any other URL. */
function numberLink(row: PullRequest): HTMLElement {
  const text = `#${row.number ?? "?"}`;
  if (!row.url || !/^https?:\/\//i.test(row.url)) return h("span", {}, text);
  return h("a", {
    href: row.url,
    target: "_blank",
    rel: "noopener noreferrer",
    title: "Opens the pull request on GitHub in a new tab",
  }, text);
}

/** The checks of the pull request's head: pending, success, failure, or — (none reported). */
function checks(value: string | null): HTMLElement {
  return value ? badge(value) : h("span", { "aria-label": "no checks" }, "—");
}

/** The team's review (contract §21) beside the state, when the team reviewed it. */
function teamReview(state: string | null, rounds: number | null): Child[] {
  if (!state) return [];
  const words: Record<string, string> = {
    pending: "in team review",
    changes_requested: "team asked changes",
    approved: "team approved",
    skipped: "team review skipped",
  };
  return [
    " ",
    h("span", {
      class: `badge badge-review_${state}`,
      title: `Team review rounds: ${rounds ?? 0}`,
    }, words[state] ?? state),
  ];
}

/** The project's pull requests from their rows, newest opened first. */
export function pullRequestsTable(rows: PullRequest[]): HTMLElement {
  if (rows.length === 0) return h("p", { class: "empty" }, NO_PULL_REQUEST);
  const newestFirst = [...rows].sort((a, b) =>
    (b.opened_at ?? "").localeCompare(a.opened_at ?? "") || (b.number ?? 0) - (a.number ?? 0)
  );
  return h(
    "table",
    { class: "pull-requests" },
    h("caption", {}, "Pull requests on GitHub, newest first"),
    h("thead", {}, h("tr", {}, ...HEADERS.map((title) => h("th", { scope: "col" }, title)))),
    h(
      "tbody",
      {},
      ...newestFirst.map((row) =>
        h(
          "tr",
          { "data-number": row.number ?? "" },
          h("td", {}, numberLink(row)),
          h("td", {}, row.title ?? ""),
          h("td", {}, row.agent ?? ""),
          h(
            "td",
            {},
            badge(row.state),
            row.draft && row.state === "open" ? " " : null,
            row.draft && row.state === "open" ? badge("draft") : null,
            ...teamReview(row.review_state, row.review_rounds),
          ),
          h("td", {}, checks(row.checks)),
          h("td", {}, count(row.sessions)),
          h("td", {}, `$${(row.cost_usd ?? 0).toFixed(2)}`),
          h("td", {}, when(row.opened_at)),
          h("td", {}, when(row.updated_at)),
        )
      ),
    ),
  );
}

export const mountPullRequests: MountArea = (root, { client, project }) => {
  const list = h("div", {});
  show(
    root,
    h("h2", {}, "Pull requests"),
    h(
      "p",
      { class: "hint" },
      "The agents' work on GitHub: one pull request per task, never merged by the platform. " +
        "Reviews, comments and failed checks on it go back to the same agent.",
    ),
    list,
  );
  return {
    async refresh() {
      show(list, pullRequestsTable(await pullRequests(client, project!.id)));
    },
  };
};
