/**
 * How a project's agents deliver their work (contract §16): `pull_request` only for a GitHub
 * project of a service with a GitHub App, and only while the project's `delivery` setting says
 * so (its default); `push` (§11) for every other repository. No I/O.
 */
import type { GitHubSettings } from "./app.ts";
import { githubRepositoryOf } from "./repository.ts";

export type DeliveryMode = "pull_request" | "push";

/** Whether `repositoryUrl` may deliver by pull request on this service. */
export function pullRequestsPossible(
  github: GitHubSettings,
  repositoryUrl: string | null,
): boolean {
  return !!github.app && githubRepositoryOf(repositoryUrl, github.webUrl) !== null;
}

/** The mode the project delivers in: its setting where pull requests are possible, else push. */
export function deliveryMode(
  github: GitHubSettings,
  project: { repository_url: string | null; delivery: string },
): DeliveryMode {
  return project.delivery === "pull_request" &&
      pullRequestsPossible(github, project.repository_url)
    ? "pull_request"
    : "push";
}
