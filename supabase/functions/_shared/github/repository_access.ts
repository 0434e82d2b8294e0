/**
 * A project names only a repository its person may push to (contract §18). When vm-api `create`
 * or `update` names a GitHub repository, the calling user's GitHub account is asked
 * (`GET /repos/{owner}/{repo}` with their user token): `permissions.push` or `admin` proves it;
 * anything less is 403 `github_repository_forbidden`. A user token sees only repositories the App
 * is installed on, so a 404 where the App is not installed saves the project unverified (it is
 * verified when an owner or admin saves it again once the App is installed); a 404 where it is
 * installed means the person cannot see it: 403.
 */
import { ApiError } from "../../_contract/errors.ts";
import { statusOf, tokenOctokit } from "./app.ts";
import { lookUpInstallation, recordedInstallation } from "./installations.ts";
import { type GitHubRepository, repositoryKey } from "./repository.ts";
import { githubApp } from "./app.ts";
import { type AccountDeps, reconnect, userToken } from "./user_accounts.ts";

/** Proved (by this login), or not provable yet because the App is not installed. */
export type Proof = { verified: true; login: string } | { verified: false; login: string };

export async function provePushAccess(
  deps: AccountDeps,
  userId: string,
  repository: GitHubRepository,
): Promise<Proof> {
  const { config, sql, log } = deps;
  const name = `${repository.owner}/${repository.repo}`;
  const { login, token } = await userToken(deps, userId);
  const ask = async (token: string) =>
    (await tokenOctokit(config.github, token, log).request("GET /repos/{owner}/{repo}", {
      owner: repository.owner,
      repo: repository.repo,
    })).data;
  try {
    // A 401 once: the kept token may have ended early; its refresh token is tried before the
    // person is asked to connect again (userToken says so when GitHub refuses the refresh).
    const data = await ask(token).catch(async (error) => {
      if (statusOf(error) !== 401) throw error;
      return await ask((await userToken(deps, userId, true)).token);
    });
    if (data.permissions?.push || data.permissions?.admin) return { verified: true, login };
  } catch (error) {
    const status = statusOf(error);
    if (status === 401) throw reconnect(login);
    if (status !== 404) throw error;
    const app = githubApp(config.github, log);
    const installed = await recordedInstallation(sql, repository) ??
      (app ? await lookUpInstallation(sql, app, repository) : null);
    if (installed === null) return { verified: false, login };
  }
  log.info("a repository refused: its person may not push to it", {
    repository: repositoryKey(repository),
  });
  throw new ApiError(
    "github_repository_forbidden",
    `GitHub says ${login} may not push to ${name}: name a repository you can push to, or ask ` +
      "its owner for write access.",
  );
}
