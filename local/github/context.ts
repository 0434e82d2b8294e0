/** What every part of the stand-in works with, built once by server.ts. */
import type { Tokens } from "./app_auth.ts";
import type { Events } from "./events.ts";
import type { AppInfo, Site } from "./shapes.ts";
import type { Account, Repo, State } from "./state.ts";
import type { UserTokens } from "./user_tokens.ts";

export interface Context {
  site: Site;
  state: State;
  /** The App under test. */
  app: AppInfo;
  /** The CI that check runs come from: another App, as GitHub Actions is. */
  ci: AppInfo;
  events: Events;
  tokens: Tokens;
  /** People's tokens for the App (oauth.ts hands them out). */
  userTokens: UserTokens;
  oauth: OAuth;
  /** Runs `fn` alone among the changes to this repository's refs (pushes, merges, deletes). */
  serialize<T>(repo: Repo, fn: () => Promise<T>): Promise<T>;
}

/** The App's OAuth client (oauth.ts): its id and secret, derived from the App's key. */
export interface OAuthClient {
  clientId: string;
  clientSecret: string;
}

/** A code handed out to a person for the App's client, until it is exchanged or expires. */
interface Grant {
  user: Account;
  clientId: string;
  redirectUri: string | null;
  expiresAt: number;
}

/** The OAuth flow's state (here, not in oauth.ts, so the two import no circle). */
export interface OAuth {
  client: OAuthClient;
  /** Codes handed out and not yet exchanged. */
  codes: Map<string, Grant>;
}

/** One queue per repository: a ref change waits for the previous one to finish. */
export function createSerializer(): Context["serialize"] {
  const tails = new Map<Repo, Promise<unknown>>();
  return (repo, fn) => {
    const run = (tails.get(repo) ?? Promise.resolve()).then(fn, fn);
    tails.set(repo, run.catch(() => {}));
    return run;
  };
}

/** A REST call the dispatcher has authenticated and admitted. */
export interface ApiCall {
  params: Record<string, string>;
  query: URLSearchParams;
  /** The JSON body (an empty object when there was none). */
  body: Record<string, unknown>;
  /** GitHub's `documentation_url` for this operation's errors. */
  docs: string;
}

/** A call made with a token: who acts (the App's bot for an installation, else the person). */
export interface TokenCall extends ApiCall {
  actor: Account;
}

/** A REST call on a repository the caller's token may touch. */
export interface RepoCall extends TokenCall {
  repo: Repo;
}
