/**
 * The reference VM agent: the daemon between a VM's agent team and the platform.
 *
 * First contact exchanges the single-use bootstrap credential from the boot data for the
 * reporter token, kept in the state dir (0600, written atomically) so a restart never needs the
 * spent credential again. Then the manifest (the repository and the project's secrets, contract
 * §10) and the team (agent/team/, contract §11) start. Every cycle: a health report with the
 * host's real load and the statuses the team declared; a poll for commands, each handled (persona
 * files, inbox, the team's sessions, approval decisions, the manifest) and its result reported;
 * and the spool drained, oldest first. A refused token (revoked) is logged loudly and retried
 * slowly, never in a tight loop.
 */
import { Alarm } from "./alarm.ts";
import { ApprovalBoard } from "./approval_board.ts";
import { writeFileAtomic } from "./atomic_file.ts";
import { type AgentHook, handleCommand } from "./command_handlers.ts";
import { HostMetrics } from "./host_metrics.ts";
import { type DeclaredAgents, type LocalApiDeps, serveLocalApi } from "./local_api.ts";
import {
  commandsPoll,
  commandsStatus,
  health,
  type HealthReport,
  manifest,
} from "../supabase/functions/_contract/reporter.ts";
import { ReporterClient, ReporterError } from "./reporter_client.ts";
import { Spool } from "./spool.ts";
import type { Manifest } from "./team/types.ts";

/** The team the agent runs: its sessions answer start/stop/restart_agents. */
export interface Team {
  hook: AgentHook;
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Work or a new manifest arrived. */
  wake(): void;
}

/** What a team is given of its VM agent. */
export interface TeamHost {
  socketPath: string;
  stateDir: string;
  workspace: string;
  manifest(): Manifest | undefined;
  /**
   * Serves an agent's session socket at `path` (contract §19: that agent's approvals only); the
   * team gives it to the agent's session user.
   */
  serveSessionSocket(path: string, agent: string): Promise<void>;
}

export interface VmAgentOptions {
  bootstrapFile: string;
  stateDir: string;
  /**
   * The team's socket; default `<stateDir>/agent.sock`. A Unix socket's path holds at most 107
   * bytes: a state directory deep in a file tree (the local fleet's) needs a shorter one.
   */
  socketPath?: string;
  workspace: string;
  cycleMs: number;
  /** The team this agent runs (agent/team/team_runner.ts on a VM), started after first contact. */
  team?: (host: TeamHost) => Team;
  /** What start/stop/restart_agents do when the team runs outside the agent (a traffic generator). */
  hook?: AgentHook;
  /** How long to wait after the reporter refused the token (it was revoked). */
  refusedBackoffMs?: number;
  log(level: "info" | "warn" | "error", message: string, fields?: Record<string, unknown>): void;
}

interface Identity {
  project_id: string;
  reporter_url: string;
  token: string;
}

const DRAIN_BATCH = 50;
const HEALTH_GRACE_CYCLES = 3;

export class VmAgent {
  readonly #options: VmAgentOptions;
  readonly #abort = new AbortController();
  readonly #metrics = new HostMetrics();
  readonly #board: ApprovalBoard;
  readonly #alarm = new Alarm(this.#abort.signal);
  #spool!: Spool;
  #client!: ReporterClient;
  #server: Deno.HttpServer | undefined;
  readonly #sessionServers: Deno.HttpServer[] = [];
  #agents: DeclaredAgents | undefined;
  #manifest: Manifest | undefined;
  #team: Team | undefined;
  #cycles = 0;
  #draining: Promise<void> = Promise.resolve();
  #loop: Promise<void> = Promise.resolve();

  constructor(options: VmAgentOptions) {
    this.#options = options;
    this.#board = new ApprovalBoard(`${options.stateDir}/decisions`);
  }

  get socketPath(): string {
    return this.#options.socketPath ?? `${this.#options.stateDir}/agent.sock`;
  }

  /** Identity first (bootstrapping if needed), then the socket, then the cycle loop. */
  async start(): Promise<void> {
    const { stateDir, workspace } = this.#options;
    await Deno.mkdir(stateDir, { recursive: true, mode: 0o700 });
    await Deno.mkdir(workspace, { recursive: true });
    this.#spool = await Spool.open(`${stateDir}/spool`);
    const identity = await this.#identity();
    this.#client = new ReporterClient({
      baseUrl: identity.reporter_url,
      projectId: identity.project_id,
      token: identity.token,
      maxAttempts: 2,
      maxBackoffMs: 5_000,
      signal: this.#abort.signal,
    });
    await Deno.remove(this.socketPath).catch(() => {});
    const socketDeps: LocalApiDeps = {
      spool: this.#spool,
      board: this.#board,
      spooled: () => this.#drainSoon(),
      declareAgents: (agents) => {
        const urgent = worthReportingNow(this.#agents, agents);
        this.#agents = agents;
        if (urgent) this.#alarm.ring();
      },
      spoolFull: (message) =>
        this.#options.log("error", "SPOOL FULL: the team's reports are being refused", {
          detail: message,
        }),
      signal: this.#abort.signal,
      log: this.#options.log,
    };
    this.#server = serveLocalApi(this.socketPath, socketDeps);
    // Root's alone (contract §19): the sessions ask for approvals on sockets of their own.
    await Deno.chmod(this.socketPath, 0o600);
    await this.#loadManifest();
    this.#loop = this.#run();
    if (this.#options.team) {
      this.#team = this.#options.team({
        socketPath: this.socketPath,
        stateDir,
        workspace,
        manifest: () => this.#manifest,
        serveSessionSocket: async (path, agent) => {
          await Deno.remove(path).catch(() => {});
          this.#sessionServers.push(serveLocalApi(path, socketDeps, agent));
          await Deno.chmod(path, 0o600);
        },
      });
      await this.#team.start();
    }
  }

  /** The team first (its last reports reach the spool), then the loop, the drain, the socket. */
  async stop(): Promise<void> {
    await this.#team?.stop();
    this.#abort.abort();
    await this.#loop;
    await this.#draining.catch(() => {});
    await this.#server?.finished;
    await Promise.all(this.#sessionServers.map((server) => server.finished));
  }

  async #run(): Promise<void> {
    while (!this.#abort.signal.aborted) {
      let pause = this.#options.cycleMs;
      try {
        await this.#cycle();
      } catch (error) {
        if (this.#abort.signal.aborted) return;
        pause = this.#onFailure(error) ?? pause;
      }
      await this.#sleep(pause);
    }
  }

  async #cycle(): Promise<void> {
    // The project stays `initializing` until its team has said how its agents are, for a few
    // cycles at most: a team that never does is reported as what it is, no agents (unhealthy).
    if (this.#agents !== undefined || ++this.#cycles > HEALTH_GRACE_CYCLES) {
      const load = await this.#metrics.sample(this.#options.workspace);
      // The route schema validated these agents; the client's body type is the same shape.
      await this.#client.call(health, { ...load, agents: this.#agents ?? [] } as HealthReport);
    }
    for (const command of (await this.#client.call(commandsPoll, {})).commands) {
      const hook = this.#team?.hook ?? this.#options.hook;
      const outcome = await handleCommand(command, {
        workspace: this.#options.workspace,
        board: this.#board,
        ...(hook ? { hook } : {}),
        acknowledge: async (ack) => {
          await this.#spool.append("/approvals/ack", ack);
        },
        refreshManifest: () => this.#fetchManifest(),
      });
      if (
        command.type === "deliver_message" || command.type === "update_manifest" ||
        command.type === "review_pull_request"
      ) {
        this.#team?.wake();
      }
      await this.#client.call(commandsStatus, { command_id: command.id, ...outcome });
      if (outcome.status === "failed") {
        this.#options.log("warn", "command failed", { type: command.type, error: outcome.error });
      }
    }
    await this.#drain();
  }

  /**
   * The manifest from the platform, kept in the state dir (0600, it holds the project's secrets)
   * so a restart while the platform is unreachable still has the team's repository and keys.
   */
  async #fetchManifest(): Promise<Manifest> {
    const fetched = await this.#client.call(manifest, {});
    await writeFileAtomic(this.#manifestFile, JSON.stringify(fetched), { mode: 0o600 });
    this.#manifest = fetched;
    return fetched;
  }

  async #loadManifest(): Promise<void> {
    try {
      await this.#fetchManifest();
    } catch (error) {
      const kept = await Deno.readTextFile(this.#manifestFile).catch(() => undefined);
      if (kept) this.#manifest = JSON.parse(kept);
      this.#options.log("warn", "the manifest could not be fetched; using the last one kept", {
        error: error instanceof Error ? error.message : String(error),
        kept: kept !== undefined,
      });
    }
  }

  get #manifestFile(): string {
    return `${this.#options.stateDir}/manifest.json`;
  }

  /** Sends spooled items in order until the spool is empty or the reporter cannot take more. */
  #drain(): Promise<void> {
    // One drain at a time; a drain that failed (the reporter was down) must not stop the next.
    this.#draining = this.#draining.catch(() => {}).then(async () => {
      while (!this.#abort.signal.aborted && this.#spool.size > 0) {
        for (const item of await this.#spool.peek(DRAIN_BATCH)) {
          try {
            await this.#client.send(item.route, item.body);
          } catch (error) {
            if (!(error instanceof ReporterError) || error.status === 401) throw error;
            if (error.status === 429 || error.status >= 500) throw error;
            // Refused for what it is: resending cannot help. Kept aside for a person to read.
            this.#options.log("error", "reporter refused a spooled item; moved to rejected/", {
              route: item.route,
              status: error.status,
              error: error.message,
            });
            await this.#reject(item.seq, item.route, item.body, error.message);
            continue;
          }
          await this.#spool.remove(item.seq);
        }
      }
    });
    return this.#draining;
  }

  #drainSoon(): void {
    this.#drain().catch((error) => {
      if (!this.#abort.signal.aborted) this.#onFailure(error);
    });
  }

  async #reject(seq: number, route: string, body: unknown, error: string): Promise<void> {
    const dir = `${this.#options.stateDir}/spool/rejected`;
    await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
    await writeFileAtomic(`${dir}/${seq}.json`, JSON.stringify({ route, body, error }));
    await this.#spool.remove(seq);
  }

  /** Logs a failed cycle; answers how long to wait before the next one when it is not the usual. */
  #onFailure(error: unknown): number | undefined {
    if (error instanceof ReporterError && error.status === 401) {
      this.#options.log(
        "error",
        "THE REPORTER REFUSED THIS VM'S TOKEN (revoked?): retrying slowly",
        {
          retry_in_ms: this.#options.refusedBackoffMs ?? 60_000,
        },
      );
      return this.#options.refusedBackoffMs ?? 60_000;
    }
    this.#options.log("warn", "agent cycle failed; the spool keeps what it holds", {
      error: error instanceof Error ? error.message : String(error),
    });
    return undefined;
  }

  /**
   * Who this VM is and where the platform is come from the boot data (authoritative: a moved
   * reporter arrives with new boot data); the token from the state dir, or a first contact.
   */
  async #identity(): Promise<Identity> {
    const boot = JSON.parse(await Deno.readTextFile(this.#options.bootstrapFile)) as {
      project_id: string;
      reporter_url: string;
      bootstrap_credential: string;
    };
    const tokenFile = `${this.#options.stateDir}/reporter_token.json`;
    try {
      const stored = JSON.parse(await Deno.readTextFile(tokenFile)) as Identity;
      if (stored.project_id === boot.project_id) {
        return { ...stored, reporter_url: boot.reporter_url };
      }
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
    }
    for (;;) {
      try {
        const { reporter_token } = await new ReporterClient({
          baseUrl: boot.reporter_url,
          projectId: boot.project_id,
          token: boot.bootstrap_credential,
          signal: this.#abort.signal,
        }).bootstrap();
        const identity = {
          project_id: boot.project_id,
          reporter_url: boot.reporter_url,
          token: reporter_token,
        };
        await writeFileAtomic(tokenFile, JSON.stringify(identity), { mode: 0o600 });
        this.#options.log("info", "first contact: reporter token stored", {
          project_id: boot.project_id,
        });
        return identity;
      } catch (error) {
        if (this.#abort.signal.aborted) throw error;
        const refused = error instanceof ReporterError && error.status === 401;
        this.#options.log(
          "error",
          refused
            ? "the bootstrap credential was refused (used or expired): this VM needs new boot data"
            : "first contact failed; retrying",
          { error: error instanceof Error ? error.message : String(error) },
        );
        await this.#sleep(refused ? this.#options.refusedBackoffMs ?? 60_000 : 5_000);
      }
    }
  }

  #sleep(ms: number): Promise<void> {
    return this.#alarm.sleep(ms);
  }
}

/**
 * The team's first declaration (the project leaves `initializing` on it) and an agent newly in
 * error are worth a health report now rather than at the end of a cycle that may last minutes.
 */
export function worthReportingNow(
  before: DeclaredAgents | undefined,
  after: DeclaredAgents,
): boolean {
  if (before === undefined) return true;
  const wasInError = new Set(before.filter((a) => a.status === "error").map((a) => a.name));
  return after.some((a) => a.status === "error" && !wasInError.has(a.name));
}
