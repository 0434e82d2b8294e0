/**
 * The local stack: the whole service on one machine, as `supabase start` lays it out. Opens the
 * database (DATABASE_URL, or a private cluster under `.local/`, seeded when new), applies pending
 * migrations, starts the Data API (PostgREST), serves it at http://127.0.0.1:$PORT/rest/v1 and the
 * functions at /functions/v1/<name> and Realtime at /realtime/v1/websocket on the same port, runs
 * the reconciler every RECONCILE_INTERVAL_MS, runs a mail catcher with a web page unless SMTP_URL
 * is set (contract §13's emails land there), and stops everything it started in order. Each local
 * VM runs the real agent team: Claude Code sessions (the CLI installed from npm under `.local/`)
 * against ANTHROPIC_BASE_URL when it is set, else against the stack's own model stand-in.
 * `deno task start` (scripts/start.ts) runs it and prints where each part answers.
 */
import { loadConfig, LOCAL_JWT_ISSUER } from "../supabase/functions/_shared/config.ts";
import { describeError } from "../supabase/functions/_shared/log.ts";
import { closeServices, createServices } from "../supabase/functions/_shared/services.ts";
import { createVmApi } from "../supabase/functions/vm-api/handler.ts";
import { createVmReconciler } from "../supabase/functions/vm-reconciler/handler.ts";
import { createWebhooksApi } from "../supabase/functions/webhooks/handler.ts";
import { createApprovalLinks } from "../supabase/functions/approval-links/handler.ts";
import { createGitHubOAuth } from "../supabase/functions/github-oauth/handler.ts";
import { createGitHubWebhooks } from "../supabase/functions/github-webhooks/handler.ts";
import { redactSmtpUrl } from "../supabase/functions/_shared/notifications/smtp.ts";
import { type MailCatcher, mailCatcherPorts, startMailCatcher } from "./mail_catcher.ts";
import { connectPerson, gitHubPort, type LocalGitHub, startLocalGitHub } from "./github/demo.ts";
import { DEMO_OWNER } from "./github/people.ts";
import { createVmReporter } from "../supabase/functions/vm-reporter/handler.ts";
import { readApiSettings } from "./data_api/api_settings.ts";
import { createGateway, type DataApiRoute } from "./gateway/gateway.ts";
import { mintApiKey } from "./auth/jwt.ts";
import { createLocalAuth } from "./auth/local_auth.ts";
import { ensureDashboard } from "../dashboard/build.ts";
import { createDashboardSite } from "./gateway/dashboard_site.ts";
import { ensureClaudeCode } from "./claude_code.ts";
import { LocalFleet, type RealTeam } from "./fleet/local_fleet.ts";
import { startModelStandIn } from "./model_standin/server.ts";
import { DEFAULT_APPROVAL_TTL_SECONDS, teamSettings } from "../agent/team/team_settings.ts";
import { openLocalDatabase } from "./database/local_database.ts";
import { migrate } from "./database/migrations.ts";
import { type DataApi, startDataApi } from "./data_api/postgrest.ts";
import { startReconcileLoop } from "./reconcile_loop.ts";
import { type RealtimeServer, startRealtime } from "./realtime/server.ts";
import { DEMO_USER_ID, seed } from "./database/seed.ts";
import { resolve } from "node:path";

/** Where each part of a running stack answers, for `start` to print. */
export interface StackAddresses {
  port: number;
  dataApi: { anon: string; serviceRole: string } | undefined;
  realtime: boolean;
  databaseUrl: string;
  /** Where the private cluster's files are (none for DATABASE_URL's database). */
  databaseFiles: string | undefined;
  mail: MailCatcher | undefined;
  smtpUrl: string | undefined;
  reconcileIntervalMs: number;
  computeDriver: string;
  /** The GitHub stand-in's demo repository, when the stack runs it (not with GITHUB_API_URL). */
  githubDemo: string | undefined;
}

export interface LocalStack {
  /**
   * Stops in order and exits; a repeat of the same signal within a second is ignored, a later
   * one, or a step hanging past the grace period, forces the exit.
   */
  shutdown(signal: string): Promise<void>;
}

export async function startStack(
  say: (line: string) => void,
  onReady: (addresses: StackAddresses) => void,
): Promise<LocalStack> {
  const database = await openLocalDatabase(say);
  say(`database: ${database.url}`);
  await migrate(database.url, say);
  if (database.fresh) {
    await seed(database.url);
    say("seeded supabase/seed.sql (a new local database)");
  }

  // Without SMTP_URL, the stack's own mail catcher takes every email (contract §13).
  const mail: MailCatcher | undefined = Deno.env.get("SMTP_URL")
    ? undefined
    : await startMailCatcher(mailCatcherPorts(Number(Deno.env.get("PORT") || 54321)));
  // Without GITHUB_API_URL, the stack's own GitHub stand-in is the App's GitHub (contract §16).
  const github: LocalGitHub | undefined = Deno.env.get("GITHUB_API_URL")
    ? undefined
    : await startLocalGitHub(
      resolve(Deno.env.get("LOCAL_GITHUB_ROOT") || ".local/github"),
      gitHubPort(Number(Deno.env.get("PORT") || 54321)),
    );
  const config = loadConfig({
    ...(github?.settings ?? {}),
    ...Deno.env.toObject(),
    DATABASE_URL: database.url,
    ...(mail ? { SMTP_URL: mail.smtpUrl } : {}),
  });
  await ensureDashboard(say);
  const dataApi = await openDataApi();
  // The local driver's VMs run the real team; the fleet needs the services it is a hook of.
  let fleet: LocalFleet | undefined;
  let model: { url: string; close(): Promise<void> } | undefined;
  const services = await createServices(config, {
    onProvision: (vm, boot) => fleet?.launch(vm.projectId, boot.bootstrapCredential),
  });
  // The stand-in's installations and tokens live in its memory: what the database remembers of
  // an earlier run's would name installations it no longer has, and tokens it no longer takes.
  if (github) {
    await services.sql`delete from private.github_installation_tokens`;
    await services.sql`delete from private.github_installations`;
    // Its user tokens too: the seeded demo user starts connected as demo-owner (contract §18).
    const [{ seeded }] = await services.sql<[{ seeded: boolean }]>`
      select exists (select 1 from auth.users where id = ${DEMO_USER_ID}) as seeded`;
    if (seeded) {
      await connectPerson(
        { config, sql: services.sql, log: services.log },
        github.standIn,
        DEMO_USER_ID,
        DEMO_OWNER,
      );
    }
  }
  // LOCAL_VM_ROOT may be relative (its default is): every path the VMs hand to a child process
  // (a session's settings, HOME, a clone's remote) must be absolute, whatever its working directory.
  const vmRoot = resolve(config.local.vmRoot);
  if (config.computeDriver === "local") {
    fleet = new LocalFleet({
      ...services,
      cycleMs: config.local.agentCycleMs,
      vmRoot,
      team: await localTeam(),
    });
  }
  const reconciler = startReconcileLoop(services, config.reconcileIntervalMs);
  const realtime = await openRealtime();

  const server = Deno.serve(
    {
      hostname: "127.0.0.1",
      port: config.port,
      onListen: ({ port }) => {
        // Emails and approval links point at this dashboard unless SITE_URL says otherwise (with
        // PORT=0 the port is known only now; nothing is sent before a request arrives).
        if (!Deno.env.get("SITE_URL")) config.notifications.siteUrl = `http://127.0.0.1:${port}`;
        fleet?.start(`http://127.0.0.1:${port}/functions/v1/vm-reporter`).catch((error) =>
          services.log.error("simulated agents could not start", describeError(error))
        );
        // Ready once the demo repository exists with the App installed: a person naming it
        // right away proves their push access against it (contract §18), which a repository the
        // App is not installed on yet could not give.
        const demo = github?.connect(`http://127.0.0.1:${port}/functions/v1/github-webhooks`)
          .catch((error) =>
            services.log.error(
              "the GitHub stand-in's demo could not be set up",
              describeError(error),
            )
          );
        void Promise.resolve(demo).then(() =>
          onReady({
            port,
            dataApi: dataApi?.keys,
            realtime: realtime !== undefined,
            databaseUrl: database.url,
            databaseFiles: database.dataDir,
            mail,
            smtpUrl: mail ? undefined : redactSmtpUrl(config.notifications.smtpUrl!),
            reconcileIntervalMs: config.reconcileIntervalMs,
            computeDriver: config.computeDriver,
            githubDemo: github?.demoUrl,
          })
        );
      },
    },
    createGateway({
      functions: {
        "vm-api": createVmApi(services),
        "vm-reporter": createVmReporter(services),
        "vm-reconciler": createVmReconciler(services),
        webhooks: createWebhooksApi(services),
        "approval-links": createApprovalLinks(services),
        "github-webhooks": createGitHubWebhooks(services),
        "github-oauth": createGitHubOAuth(services),
      },
      ...(dataApi ? { dataApi: dataApi.route } : {}),
      ...(dataApi ? { site: createDashboardSite(dataApi.keys.anon) } : {}),
      ...(realtime ? { realtime: (request: Request) => realtime.handle(request) } : {}),
      ...(config.jwt.secret
        ? {
          auth: createLocalAuth({
            sql: services.sql,
            jwtSecret: config.jwt.secret,
            issuer: config.jwt.issuer ?? LOCAL_JWT_ISSUER,
            accessTokenSeconds: config.local.authJwtExpirySeconds,
            onError: (error) => services.log.error("local sign-in failed", describeError(error)),
          }),
        }
        : {}),
    }),
  );

  /**
   * PostgREST with the functions' JWT secret, and the API keys signed with it. Hosted projects
   * have Supabase's own Data API; locally it needs the HS256 secret (the local default has one).
   */
  async function openDataApi(): Promise<
    | { process: DataApi; route: DataApiRoute; keys: { anon: string; serviceRole: string } }
    | undefined
  > {
    const jwtSecret = config.jwt.secret;
    if (!jwtSecret) {
      say("Data API: not started (it needs an HS256 JWT secret; none is configured)");
      return undefined;
    }
    try {
      const process = await startDataApi({
        databaseUrl: database.url,
        ...(Deno.env.get("AUTHENTICATOR_PASSWORD")
          ? { authenticatorPassword: Deno.env.get("AUTHENTICATOR_PASSWORD")! }
          : {}),
        jwtSecret,
        settings: await readApiSettings(),
        log: say,
      });
      say(`Data API: ${process.version} (pid ${await process.pid()})`);
      return {
        process,
        route: { origin: process.origin, jwtSecret },
        keys: {
          anon: await mintApiKey("anon", jwtSecret),
          serviceRole: await mintApiKey("service_role", jwtSecret),
        },
      };
    } catch (error) {
      say(`cannot start: ${(error as Error).message}`);
      await database.stop();
      Deno.exit(1);
    }
  }

  /**
   * The local Realtime server (Broadcast from Database on private channels), fed by logical
   * replication. A database that cannot feed it (no wal_level=logical, a role that may not
   * replicate) gets one sentence saying what to set, and everything else runs without it.
   */
  async function openRealtime(): Promise<RealtimeServer | undefined> {
    const jwtSecret = config.jwt.secret;
    if (!jwtSecret) {
      say("Realtime: not started (it needs an HS256 JWT secret; none is configured)");
      return undefined;
    }
    try {
      const started = await startRealtime({
        databaseUrl: database.url,
        jwtSecret,
        log: (line) => say(`Realtime: ${line}`),
      });
      if (!started.ok) {
        say(`Realtime: not started: ${started.problem}; everything else runs.`);
        return undefined;
      }
      return started.server;
    } catch (error) {
      say(`Realtime: not started: ${(error as Error).message}; everything else runs.`);
      return undefined;
    }
  }

  /** The real team's needs: the CLI, and a model (ANTHROPIC_BASE_URL, or the stand-in). */
  async function localTeam(): Promise<RealTeam> {
    const settings = teamSettings(Deno.env.toObject());
    const claude = await ensureClaudeCode();
    say(`Claude Code: ${claude}`);
    if (!settings.modelBaseUrl) {
      model = await startModelStandIn({ hostname: "127.0.0.1", port: 0 });
      say(
        `Model URL:     ${model.url} (the stack's stand-in; set ANTHROPIC_BASE_URL for a real one)`,
      );
    } else {
      say(`Model URL:     ${settings.modelBaseUrl} (ANTHROPIC_BASE_URL)`);
    }
    return {
      claude,
      ...settings,
      ...(model
        ? { modelBaseUrl: model.url, apiKey: settings.apiKey ?? "local-model-stand-in" }
        : {}),
      approvalTtlSeconds: DEFAULT_APPROVAL_TTL_SECONDS,
      // The stack's VMs share this machine: a project's system packages are checked, never
      // installed (contract §20), whatever AGENT_INSTALL_PACKAGES says.
      installPackages: false,
      // The local "git hosting service" is part of the local "cloud", beside the VMs.
      repoRoot: `${vmRoot}/repos`,
    };
  }

  let stoppingSince: number | undefined;
  return {
    async shutdown(signal) {
      if (stoppingSince !== undefined) {
        if (performance.now() - stoppingSince < SAME_STOP_MS) return;
        say(`${signal} again: exiting now`);
        await database.stop();
        Deno.exit(1);
      }
      stoppingSince = performance.now();
      say(`${signal}: stopping`);
      const force = setTimeout(async () => {
        say(`still stopping after ${SHUTDOWN_GRACE_MS / 1000} s: exiting now`);
        await database.stop();
        Deno.exit(1);
      }, SHUTDOWN_GRACE_MS);
      await fleet?.stop();
      await model?.close();
      await reconciler.stop();
      await realtime?.close();
      await server.shutdown();
      await dataApi?.process.stop();
      await closeServices(services);
      await mail?.stop();
      await github?.close();
      await database.stop();
      clearTimeout(force);
      say("stopped");
      Deno.exit(0);
    },
  };
}

const SHUTDOWN_GRACE_MS = 10_000;
/**
 * A signal this soon after the first is the same stop, not a second one: `deno task start` passes
 * on to this process the signal its process group got (Ctrl-C, `kill -TERM -<pgid>`), so this
 * process is often signalled twice within milliseconds. Taken as "again", that echo exited before
 * the request log was flushed.
 */
const SAME_STOP_MS = 1_000;
