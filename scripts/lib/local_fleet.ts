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
import { newReporterToken } from "../../supabase/functions/_shared/reporter_token.ts";

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

  /** A VM was provisioned with this token (from the compute driver's provision call). */
  launch(projectId: string, token: string): void {
    if (!this.#reporterUrl) {
      this.#waiting.set(projectId, token);
      return;
    }
    this.#runners.get(projectId)?.stop();
    const runner = new Runner(
      this.#deps,
      projectId,
      (signal) => new ReporterClient({ baseUrl: this.#reporterUrl!, projectId, token, signal }),
      () => this.#runners.delete(projectId),
    );
    this.#runners.set(projectId, runner);
  }

  /**
   * Starts the runners once the reporter is listening, including for VMs that were already up
   * before this process started (their tokens died with the previous process: each gets a new
   * one, the way an operator would issue it with `deno task reporter-token`).
   */
  async start(reporterUrl: string): Promise<void> {
    this.#reporterUrl = reporterUrl;
    for (const [projectId, token] of this.#waiting) this.launch(projectId, token);
    this.#waiting.clear();
    const vms = await this.#deps.sql<{ project_id: string }[]>`
      select v.project_id from local_compute.vms v
      join public.projects p on p.id = v.project_id
      where v.target <> 'gone'`;
    for (const { project_id } of vms) {
      if (this.#runners.has(project_id)) continue;
      const token = await newReporterToken();
      await this.#deps.sql`
        select private.issue_reporter_token(${project_id}, ${token.hash}, 'provision', '1 hour')`;
      this.launch(project_id, token.plaintext);
    }
  }

  async stop(): Promise<void> {
    await Promise.all([...this.#runners.values()].map((runner) => runner.stop()));
  }
}

class Runner {
  readonly #team: SimulatedTeam;
  readonly #done: Promise<void>;
  readonly #abort = new AbortController();
  #wake: (() => void) | undefined;

  constructor(
    readonly deps: LocalFleetDeps,
    readonly projectId: string,
    client: (signal: AbortSignal) => ReporterClient,
    onEnd: () => void,
  ) {
    this.#team = new SimulatedTeam(client(this.#abort.signal));
    this.#done = this.#run().finally(onEnd);
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
        if (!booted) {
          await this.#team.boot();
          booted = true;
          log.info("simulated agents booted", fields);
        } else {
          await this.#team.cycle();
        }
      } catch (error) {
        if (this.#abort.signal.aborted) return;
        if (error instanceof ReporterError && error.status === 401) {
          log.info("simulated agents stopped: the reporter refused their token", fields);
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
