/**
 * Whether the App is installed on a repository: what the database recorded (the installation
 * webhooks keep it), or GitHub's own answer to `GET /repos/{owner}/{repo}/installation` (as the
 * App, with its JWT), which is recorded in turn.
 */
import type { Sql } from "../db.ts";
import { type AppOctokit, statusOf } from "./app.ts";
import { type GitHubRepository, repositoryKey } from "./repository.ts";

/** The recorded installation that reaches `repository` (not suspended), or null. */
export async function recordedInstallation(
  sql: Sql,
  repository: GitHubRepository,
): Promise<number | null> {
  const [{ id }] = await sql<[{ id: string | null }]>`
    select private.github_installation_of(${repositoryKey(repository)}) as id`;
  return id === null ? null : Number(id);
}

/**
 * Asks GitHub which installation reaches `repository` and records the answer: the installation
 * and the repository, or (404) that the App is not installed there. Answers its id, or null.
 */
export async function lookUpInstallation(
  sql: Sql,
  app: AppOctokit,
  repository: GitHubRepository,
): Promise<number | null> {
  try {
    const { data } = await app.request("GET /repos/{owner}/{repo}/installation", {
      owner: repository.owner,
      repo: repository.repo,
    });
    const account = data.account && "login" in data.account ? data.account.login : repository.owner;
    await sql`select private.record_github_installation(
      ${data.id}, ${account}, ${[repositoryKey(repository)]}, false
    )`;
    return data.id;
  } catch (error) {
    if (statusOf(error) !== 404) throw error;
    await sql`select private.forget_github_repository(${repositoryKey(repository)})`;
    return null;
  }
}
