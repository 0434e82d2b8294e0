/**
 * The agents of the local driver's simulated VMs. Each VM that has been handed its reporter
 * token gets a runner that watches the VM's power state like the VM's own init system would:
 * when the VM comes up it boots the team (a first health report), then runs one agent cycle every
 * LOCAL_AGENT_CYCLE_MS while the VM runs; it pauses while the VM is stopped and ends when the VM
 * is gone or its token is refused.
 */
import { ReporterClient, ReporterError } from "../../agent/reporter_client.ts";
import { SimulatedTeam } from "../../agent/simulated_team.ts";
import type { Compute } from "../../supabase/functions/_shared/compute/compute.ts";
import type { Sql } from "../../supabase/functions/_shared/db.ts";
import { describeError, type Logger } from "../../supabase/functions/_shared/log.ts";
import { newBootstrapCredential } from "../../supabase/functions/_shared/reporter_token.ts";

const POWER_POLL_MS = 250;

export interface LocalFleetDeps {
  sql: Sql;
  compute: Compute;
  log: Logger;
  cycleMs: number;
}

export class LocalFleet {
  readonly #deps: LocalFleetDeps;
  readonly #runners = new Map<string, Runner>();
  readonly #waiting = new Map<string, string>();
  #reporterUrl: string | undefined;

  constructor(deps: LocalFleetDeps) {
    this.#deps = deps;
  }

  /** A VM was provisioned with this boot data (from the compute driver's provision call). */
  launch(projectId: string, bootstrapCredential: string): void {
    if (!this.#reporterUrl) {
      this.#waiting.set(projectId, bootstrapCredential);
      return;
    }
    this.#runners.get(projectId)?.stop();
    const runner = new Runner(
      this.#deps,
      projectId,
      (token, signal) =>
        new ReporterClient({ baseUrl: this.#reporterUrl!, projectId, token, signal }),
      bootstrapCredential,
      () => this.#runners.delete(projectId),
    );
    this.#runners.set(projectId, runner);
  }

  /**
   * Starts the runners once the reporter is listening, including for VMs that were already up
   * before this process started (their tokens died with the previous process: each gets new
   * boot data, as if re-imaged).
   */
  async start(reporterUrl: string): Promise<void> {
    this.#reporterUrl = reporterUrl;
    for (const [projectId, credential] of this.#waiting) this.launch(projectId, credential);
    this.#waiting.clear();
    const vms = await this.#deps.sql<{ project_id: string }[]>`
      select v.project_id from local_compute.vms v
      join public.projects p on p.id = v.project_id
      where v.target <> 'gone'`;
    for (const { project_id } of vms) {
      if (this.#runners.has(project_id)) continue;
      const credential = await newBootstrapCredential();
      await this.#deps.sql`
        select private.issue_bootstrap_credential(${project_id}, ${credential.hash}, '1 hour')`;
      this.launch(project_id, credential.plaintext);
    }
  }

  async stop(): Promise<void> {
    await Promise.all([...this.#runners.values()].map((runner) => runner.stop()));
  }
}

type ClientFactory = (token: string, signal: AbortSignal) => ReporterClient;

class Runner {
  readonly #client: ClientFactory;
  readonly #bootstrapCredential: string;
  readonly #done: Promise<void>;
  readonly #abort = new AbortController();
  #team: SimulatedTeam | undefined;
  #wake: (() => void) | undefined;

  constructor(
    readonly deps: LocalFleetDeps,
    readonly projectId: string,
    client: ClientFactory,
    bootstrapCredential: string,
    onEnd: () => void,
  ) {
    this.#client = client;
    this.#bootstrapCredential = bootstrapCredential;
    this.#done = this.#run().finally(onEnd);
  }

  /** The team, once the VM has exchanged its boot data for a reporter token (first boot). */
  async #teamOnBoot(): Promise<SimulatedTeam> {
    if (!this.#team) {
      const signal = this.#abort.signal;
      const { reporter_token } = await this.#client(this.#bootstrapCredential, signal).bootstrap();
      this.#team = new SimulatedTeam(this.#client(reporter_token, signal));
    }
    return this.#team;
  }

  /** Ends the runner at once, abandoning a cycle in progress (a VM losing power). */
  async stop(): Promise<void> {
    this.#abort.abort();
    this.#wake?.();
    await this.#done;
  }

  async #run(): Promise<void> {
    const { compute, log, cycleMs } = this.deps;
    const fields = { component: "local-agents", project_id: this.projectId };
    let booted = false;
    while (!this.#abort.signal.aborted) {
      try {
        const { state } = await compute.powerState(this.projectId);
        if (state === "gone" || state === "deleting") return;
        if (state !== "running") {
          booted = false;
          await this.#sleep(POWER_POLL_MS);
          continue;
        }
        const team = await this.#teamOnBoot();
        if (!booted) {
          await team.boot();
          booted = true;
          log.info("simulated agents booted", fields);
        } else {
          await team.cycle();
        }
      } catch (error) {
        if (this.#abort.signal.aborted) return;
        if (error instanceof ReporterError && error.status === 401) {
          log.info("simulated agents stopped: the reporter refused their credentials", fields);
          return;
        }
        log.warn("simulated agent cycle failed", { ...fields, ...describeError(error) });
      }
      await this.#sleep(cycleMs);
    }
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      if (this.#abort.signal.aborted) return resolve();
      const timer = setTimeout(resolve, ms);
      this.#wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }
}
