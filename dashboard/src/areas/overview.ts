/**
 * Overview: what happened to the project and what its agents did, newest first; with the pull
 * requests the platform opened, merged or closed for them (its events, contract §16), titled.
 * Above it, while no one has proved push access to the project's GitHub repository (contract §18),
 * why, and that its pull requests, issues and token wait for it.
 */
import { formatPlace } from "../address.ts";
import type { MountArea } from "../area.ts";
import {
  type GitHubRepository,
  knownProjectGitHub,
  newest,
  type Project,
  projectEvents,
  type PullRequest,
  pullRequests,
} from "../data.ts";
import { entryText } from "../entry_text.ts";
import type { Tables } from "../../../supabase/types/database.ts";
import { badge, h, show, table, when } from "../ui.ts";
import { unverifiedReason } from "./settings/github_verification.ts";

type ActivityRow = Tables<"project_activity_feed">;

/** The events that tell of the project's pull requests. */
export const PULL_REQUEST_EVENTS = [
  "pull_request.opened",
  "pull_request.merged",
  "pull_request.closed",
] as const;

const LIMIT = 50;

/** The activity feed from its rows, newest first. */
export function activityTable(rows: ActivityRow[]): HTMLElement {
  return table(
    ["When", "What", "Who", "Severity"],
    rows.map((row) => [
      when(row.occurred_at),
      entryText(row.action ?? "", row.details as Record<string, unknown> | null),
      row.agent ?? row.source ?? "",
      badge(row.severity),
    ]),
    `The latest ${LIMIT} entries`,
  );
}

/**
 * Pull request events as activity rows (source `github`, the agent as who), each with its pull
 * request's title when `known` has it; merged with the feed's rows, newest first, at most `limit`.
 */
export function withPullRequestEvents(
  feed: ActivityRow[],
  events: Tables<"events">[],
  known: PullRequest[],
  limit = LIMIT,
): ActivityRow[] {
  const titles = new Map(known.map((pr) => [pr.number, pr.title]));
  const told: ActivityRow[] = events.map((event) => {
    const data = (event.data ?? {}) as Record<string, unknown>;
    const title = typeof data.number === "number" ? titles.get(data.number) : undefined;
    return {
      project_id: event.project_id,
      source: "github",
      action: event.type,
      severity: "info",
      agent: typeof data.agent === "string" ? data.agent : null,
      details: (title ? { ...data, title } : data) as ActivityRow["details"],
      occurred_at: event.occurred_at,
    };
  });
  return [...feed, ...told]
    .sort((a, b) => (b.occurred_at ?? "").localeCompare(a.occurred_at ?? ""))
    .slice(0, limit);
}

/** Whether a repository URL may name a GitHub repository: `http(s)://<host>/<owner>/<repo>`. */
export function mayBeOnGitHub(repositoryUrl: string | null): boolean {
  const address = (repositoryUrl ?? "").replace(/(\.git)?\/?$/, "");
  return /^https?:\/\/[^/]+\/[^/]+\/[^/]+$/i.test(address);
}

/** Why the project's GitHub work waits, linking to Settings; null when nothing waits. */
export function unverifiedLine(
  github: GitHubRepository | null,
  project: Pick<Project, "id" | "organization_id">,
): HTMLElement | null {
  if (!github || github.verified) return null;
  const settings = formatPlace({
    view: "project",
    org: project.organization_id,
    project: project.id,
    area: "Settings",
  });
  return h(
    "p",
    { class: "alert github-unverified" },
    `${unverifiedReason(github)} Until then, pull requests, issues and the agents' GitHub token ` +
      "wait for it. ",
    h("a", { href: settings }, "Open Settings"),
  );
}

export const mountOverview: MountArea = (root, { client, project, fail }) => {
  const feed = h("div", {});
  const github = h("div", {});
  show(root, github, h("h2", {}, "Activity"), feed);
  // Only a web address can be on GitHub, and status is asked once a page (Settings asks again):
  // opening Overview and its ticks spend next to none of the person's vm-api budget.
  if (mayBeOnGitHub(project!.repository_url)) {
    void knownProjectGitHub(client, project!.id)
      .then((answer) => show(github, unverifiedLine(answer, project!)))
      .catch(fail);
  }
  return {
    async refresh() {
      const [rows, events] = await Promise.all([
        newest(client, "project_activity_feed", project!.id, "occurred_at", LIMIT),
        projectEvents(
          client,
          project!.organization_id,
          project!.id,
          PULL_REQUEST_EVENTS,
          LIMIT,
        ),
      ]);
      // The events name the number; the read model has the title.
      const known = events.length ? await pullRequests(client, project!.id) : [];
      show(feed, activityTable(withPullRequestEvents(rows, events, known)));
    },
  };
};
