/**
 * `status`'s `project.github` (contract §16): null unless the service has a GitHub App and the
 * project's repository is on its GitHub; else the repository, whether the App is installed on it
 * (as recorded: the installation webhooks and the platform's lookups keep it) and where a person
 * installs it.
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
}

export async function projectGitHub(
  github: GitHubSettings,
  sql: Sql,
  repositoryUrl: string | null,
): Promise<ProjectGitHub | null> {
  if (!github.app) return null;
  const repository = githubRepositoryOf(repositoryUrl, github.webUrl);
  if (!repository) return null;
  return {
    ...repository,
    installed: await recordedInstallation(sql, repository) !== null,
    install_url: installUrl(github),
  };
}

/** `${GITHUB_WEB_URL}/apps/<slug>/installations/new`. */
export function installUrl(github: GitHubSettings): string {
  return `${github.webUrl}/apps/${github.app?.slug}/installations/new`;
}
