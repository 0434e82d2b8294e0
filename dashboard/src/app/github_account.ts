/**
 * The person's GitHub account in the page (contract §18). It is read once when the page starts and
 * kept in the store. Connecting leaves the page: vm-api `github_authorize` names GitHub's authorize
 * page, and after it the platform's `github-oauth` callback sends the browser back to the site with
 * `?github=connected`. The place the person left from (the address's hash) is kept in the tab's
 * sessionStorage meanwhile, so they come back to it, with the query gone and one notice.
 */
import {
  type DashboardClient,
  type GitHubAccount,
  githubAccount,
  githubAuthorize,
  githubDisconnect,
} from "../data.ts";
import type { Store } from "../store.ts";

/** Where the person was when they left for GitHub, for the tab's return. */
const RETURN_KEY = "vm-service-github-return";

/** What of the browser's window connecting and coming back use. */
export interface Browser {
  location: { href: string; assign(url: string): void };
  history: { replaceState(data: unknown, unused: string, url: string): void };
  sessionStorage: Pick<Storage, "getItem" | "setItem" | "removeItem">;
}

export interface GitHubAccountOptions {
  client: DashboardClient;
  store: Store;
  userId: string;
  browser: Browser;
  say(message: string): void;
  fail(error: unknown): void;
}

export function githubAccountControl(
  { client, store, userId, browser, say, fail }: GitHubAccountOptions,
) {
  return {
    account: (): GitHubAccount | null | undefined => store.state.github,
    async read(): Promise<void> {
      store.setGitHub(await githubAccount(client, userId));
    },
    /** Sends the browser to GitHub's authorize page; it comes back with `?github=connected`. */
    async connect(): Promise<void> {
      try {
        const { url } = await githubAuthorize(client);
        // Only a web page: the address comes from the service, but a link is never a script.
        if (!/^https?:\/\//i.test(url)) throw new Error("github_authorize answered no web page");
        const { hash } = new URL(browser.location.href);
        browser.sessionStorage.setItem(RETURN_KEY, hash);
        browser.location.assign(url);
      } catch (error) {
        fail(error);
      }
    },
    async disconnect(): Promise<void> {
      try {
        await githubDisconnect(client);
        store.setGitHub(null);
        say("GitHub disconnected.");
      } catch (error) {
        fail(error);
      }
    },
  };
}

export type GitHubAccountControl = ReturnType<typeof githubAccountControl>;

/**
 * Back from GitHub: takes `github` out of the address (a reload must not say it again) and puts
 * back the place the person left from; whether it says the account was connected. Called before
 * the store reads the address.
 */
export function returnFromGitHub(browser: Browser): boolean {
  const address = new URL(browser.location.href);
  const outcome = address.searchParams.get("github");
  if (outcome === null) return false;
  address.searchParams.delete("github");
  const left = browser.sessionStorage.getItem(RETURN_KEY);
  browser.sessionStorage.removeItem(RETURN_KEY);
  if (left && !address.hash) address.hash = left;
  browser.history.replaceState(null, "", address.pathname + address.search + address.hash);
  return outcome === "connected";
}

/** The notice after coming back connected. */
export function connectedNotice(account: GitHubAccount | null | undefined): string {
  return account ? `GitHub connected as @${account.login}.` : "GitHub connected.";
}
