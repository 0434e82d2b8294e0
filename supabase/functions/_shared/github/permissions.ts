/**
 * Whose words are work (contract §18): before deliveries are acted on, GitHub is asked what each
 * person they name may do on the repository — the author of a review, a review comment or a
 * comment, the person who added a label, an issue's author —
 * `GET /repos/{owner}/{repo}/collaborators/{username}/permission` (its `role_name`), with the
 * platform's own installation token, and the answer kept in the database
 * (private.github_permissions), where every isolate finds it and acting uses it for at most 5
 * minutes. A payload's `author_association` is never read: a `MEMBER` may have no access to the
 * repository, a `COLLABORATOR` may only read. Only people of repositories a verified project names
 * are asked about (nothing else is acted on). What GitHub does not answer now is asked again on
 * the next run; the delivery waits for it (private.github_role raises), never guessed.
 */
import type { Octokit } from "@octokit/core";
import type { Sql } from "../db.ts";
import { describeError } from "../log.ts";
import { statusOf, tokenOctokit } from "./app.ts";
import { type GitHubDeps, installationToken } from "./tokens.ts";

/** An answer is asked again once it is this old (acting uses it up to 5 minutes). */
export const PERMISSION_REFRESH_SECONDS = 240;

/** Asks GitHub about the people the unprocessed deliveries (or only `only`) need. */
export async function learnPermissions(
  deps: GitHubDeps,
  limit: number,
  only?: string,
): Promise<number> {
  const { config, sql, log } = deps;
  if (!config.github.app) return 0;
  const people = await sql<{ repository: string; login: string }[]>`
    select repository, login from private.github_people_to_check(
      ${config.github.webUrl}, ${limit}, ${PERMISSION_REFRESH_SECONDS}, ${only ?? null}
    )`;
  const clients = new Map<string, Octokit | null>();
  let learned = 0;
  for (const { repository, login } of people) {
    const [owner, repo] = repository.split("/") as [string, string];
    try {
      let octokit = clients.get(repository);
      if (octokit === undefined) {
        const token = await installationToken(deps, { owner, repo }, "platform");
        octokit = token ? tokenOctokit(config.github, token.token, log) : null;
        clients.set(repository, octokit);
      }
      if (!octokit) continue;
      await record(sql, repository, login, await roleOf(octokit, owner, repo, login));
      learned++;
    } catch (error) {
      log.warn("GitHub did not say what a person may do: asked again later", {
        repository,
        ...describeError(error),
      });
    }
  }
  return learned;
}

/** GitHub's `role_name` for `login`; `none` when GitHub does not know them as a collaborator. */
async function roleOf(octokit: Octokit, owner: string, repo: string, login: string) {
  try {
    const { data } = await octokit.request(
      "GET /repos/{owner}/{repo}/collaborators/{username}/permission",
      { owner, repo, username: login },
    );
    return data.role_name || data.permission || "none";
  } catch (error) {
    if (statusOf(error) === 404) return "none";
    throw error;
  }
}

async function record(sql: Sql, repository: string, login: string, role: string): Promise<void> {
  await sql`select private.record_github_permission(${repository}, ${login}, ${role})`;
}
