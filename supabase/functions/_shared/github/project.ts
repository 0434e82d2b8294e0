/**
 * `status`'s `project.github` (contract §16, §18): null unless the service has a GitHub App and
 * the project's repository is on its GitHub; else the repository, whether the App is installed on
 * it (as recorded: the installation webhooks and the platform's lookups keep it), where a person
 * installs it, and whether someone proved push access to it (who, when; else why not and what to
 * do): without that the project gets no token, no issue and no pull request.
 */
import type { Sql } from "../db.ts";
import type { GitHubSettings } from "./app.ts";
import { recordedInstallation } from "./installations.ts";
import { githubRepositoryOf } from "./repository.ts";

export interface ProjectGitHub {
  owner: string;
  repo: string;
  installed: boolean;
  install_url: string;
  verified: boolean;
  verified_by: string | null;
  verified_at: string | null;
  unverified_reason: string | null;
}

export async function projectGitHub(
  github: GitHubSettings,
  sql: Sql,
  project: { id: string; repository_url: string | null },
): Promise<ProjectGitHub | null> {
  if (!github.app) return null;
  const repository = githubRepositoryOf(project.repository_url, github.webUrl);
  if (!repository) return null;
  const [installation, [verification]] = await Promise.all([
    recordedInstallation(sql, repository),
    sql<{ login: string; verified_at: Date }[]>`
      select login, verified_at from private.project_github_verification(${project.id})`,
  ]);
  const installed = installation !== null;
  const name = `${repository.owner}/${repository.repo}`;
  return {
    ...repository,
    installed,
    install_url: installUrl(github),
    verified: verification !== undefined,
    verified_by: verification?.login ?? null,
    verified_at: verification ? new Date(verification.verified_at).toISOString() : null,
    unverified_reason: verification
      ? null
      : installed
      ? `No one has proved push access to ${name} yet: an owner or admin saves the repository ` +
        "again with their GitHub account connected."
      : `The GitHub App is not installed on ${name}: install it, then an owner or admin saves ` +
        "the repository again with their GitHub account connected.",
  };
}

/** `${GITHUB_WEB_URL}/apps/<slug>/installations/new`. */
export function installUrl(github: GitHubSettings): string {
  return `${github.webUrl}/apps/${github.app?.slug}/installations/new`;
}
