/**
 * The GitHub App as one object (contract §16): an octokit client whose requests go to
 * GITHUB_API_URL with GitHub's media type and API version, authenticated as the App (a JWT,
 * RS256, at most 10 minutes, by `@octokit/auth-app`) where GitHub asks for one: the installation
 * lookup and the minting of installation tokens. Built once per isolate for the settings.
 */
import { createAppAuth } from "@octokit/auth-app";
import { Octokit } from "@octokit/core";
import type { Config } from "../config.ts";
import type { Logger } from "../log.ts";

/** The headers contract §16 names, on every request. */
export const GITHUB_HEADERS = {
  accept: "application/vnd.github+json",
  "x-github-api-version": "2022-11-28",
} as const;

const USER_AGENT = "vm-service";

export type GitHubSettings = Config["github"];
export type GitHubAppSettings = NonNullable<GitHubSettings["app"]>;

/** The App's client: `request` calls as the App; `auth({type: "installation", …})` mints tokens. */
export type AppOctokit = Octokit;

const apps = new WeakMap<GitHubSettings, AppOctokit>();

/** The App's client for these settings (one per isolate), or undefined without an App. */
export function githubApp(github: GitHubSettings, log: Logger): AppOctokit | undefined {
  const app = github.app;
  if (!app) return undefined;
  let octokit = apps.get(github);
  if (!octokit) {
    octokit = withGitHubHeaders(
      new Octokit({
        baseUrl: github.apiUrl,
        userAgent: USER_AGENT,
        authStrategy: createAppAuth,
        auth: { appId: app.id, privateKey: app.privateKey },
        log: octokitLog(log),
      }),
    );
    apps.set(github, octokit);
  }
  return octokit;
}

/** A client that calls with an installation token (calls made for one repository). */
export function tokenOctokit(github: GitHubSettings, token: string, log: Logger): Octokit {
  return withGitHubHeaders(
    new Octokit({
      baseUrl: github.apiUrl,
      userAgent: USER_AGENT,
      auth: token,
      log: octokitLog(log),
    }),
  );
}

function withGitHubHeaders(octokit: Octokit): Octokit {
  octokit.hook.before("request", (options) => {
    Object.assign(options.headers, GITHUB_HEADERS);
  });
  return octokit;
}

/** octokit's own notices, at debug and warn; it logs no request, header or token. */
function octokitLog(log: Logger) {
  return {
    debug: (message: string) => log.debug(`octokit: ${message}`),
    info: (message: string) => log.debug(`octokit: ${message}`),
    warn: (message: string) => log.warn(`octokit: ${message}`),
    error: (message: string) => log.error(`octokit: ${message}`),
  };
}

/** The HTTP status of an octokit failure (a RequestError), or undefined for anything else. */
export function statusOf(error: unknown): number | undefined {
  const status = (error as { status?: unknown } | null)?.status;
  return typeof status === "number" ? status : undefined;
}
