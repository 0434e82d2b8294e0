/**
 * The GitHub stand-in as `deno task start` runs it (contract §16, "Locally"): its repositories
 * kept under `.local/github/` between runs, its App's key too (so the App stays the same App,
 * with the same OAuth client id and secret, which derive from the key), a demo owner whose
 * repository `demo` (the sample project) has the App installed and the demo people as
 * collaborators, webhooks to the stack's `github-webhooks`, and the settings the functions read
 * to reach it (GITHUB_CLIENT_ID and GITHUB_CLIENT_SECRET among them). On github.com the
 * operator registers the App (docs/github.md); nothing here is deployed.
 */
import {
  type AccountDeps,
  keepAccount,
} from "../../supabase/functions/_shared/github/user_accounts.ts";
import { SAMPLE_FILES } from "../fleet/sample_repository.ts";
import { DEMO_OWNER } from "./people.ts";
import { type GitHubStandIn, startGitHubStandIn } from "./server.ts";

export const DEMO_REPOSITORY = "demo";

export interface LocalGitHub {
  standIn: GitHubStandIn;
  /** GITHUB_* as the functions read them. */
  settings: Record<string, string>;
  /** The demo repository's address, as a project names it. */
  demoUrl: string;
  /** Webhooks go to the stack once it listens; the demo repository is then installed. */
  connect(webhookUrl: string): Promise<void>;
  close(): Promise<void>;
}

export async function startLocalGitHub(root: string, port: number): Promise<LocalGitHub> {
  await Deno.mkdir(root, { recursive: true });
  const keyFile = `${root}/app-key.pem`;
  const kept = await Deno.readTextFile(keyFile).catch(() => undefined);
  const standIn = await startGitHubStandIn({
    root: `${root}/repositories`,
    port,
    ...(kept ? { privateKey: kept } : {}),
  });
  if (!kept) await Deno.writeTextFile(keyFile, standIn.app.privateKey, { mode: 0o600 });
  return {
    standIn,
    settings: {
      GITHUB_APP_ID: String(standIn.app.id),
      GITHUB_APP_PRIVATE_KEY: standIn.app.privateKey,
      GITHUB_APP_SLUG: standIn.app.slug,
      GITHUB_CLIENT_ID: standIn.app.clientId,
      GITHUB_CLIENT_SECRET: standIn.app.clientSecret,
      GITHUB_WEBHOOK_SECRET: standIn.webhookSecret,
      GITHUB_API_URL: standIn.apiUrl,
      GITHUB_WEB_URL: standIn.webUrl,
    },
    demoUrl: `${standIn.webUrl}/${DEMO_OWNER}/${DEMO_REPOSITORY}`,
    async connect(webhookUrl) {
      standIn.webhookUrl = webhookUrl;
      await standIn.createRepository(DEMO_OWNER, DEMO_REPOSITORY, { seed: SAMPLE_FILES });
      standIn.install(DEMO_OWNER, [DEMO_REPOSITORY]);
    },
    close: () => standIn.close(),
  };
}

/** The stand-in's port for the stack's: the Supabase CLI's layout goes on, or a free one for 0. */
export function gitHubPort(stackPort: number): number {
  return stackPort === 0 ? 0 : stackPort + 8;
}

/**
 * Connects the platform's user `userId` to the stand-in's person `login`, as if they had pressed
 * Connect GitHub and authorized the App as that person (contract §18, "Locally": the seeded demo
 * user starts connected as demo-owner).
 */
export async function connectPerson(
  deps: AccountDeps,
  standIn: GitHubStandIn,
  userId: string,
  login: string,
): Promise<void> {
  const pair = standIn.connectUser(login);
  const at = (seconds: number) => new Date(Date.now() + seconds * 1000).toISOString();
  await keepAccount(deps, userId, {
    token: pair.access_token,
    expiresAt: at(pair.expires_in),
    refreshToken: pair.refresh_token,
    refreshTokenExpiresAt: at(pair.refresh_token_expires_in),
  });
}
