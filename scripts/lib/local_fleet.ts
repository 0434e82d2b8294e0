/**
 * The local driver's simulated VMs run what a real VM runs: the reference VM agent
 * (agent/vm_agent.ts, in this process to stay cheap with many VMs) and, as its agent team, a
 * simulated team that talks to it over its Unix socket. Each VM has its directories under
 * `${LOCAL_VM_ROOT}/<project_id>/` (contract §7): `bootstrap.json` (its boot data), `state/`
 * (token, spool, socket) and `workspace/` (persona files, inbox). A runner watches the VM's power
 * state like its init system would: agent and team start when it runs, stop when it stops, and
 * its directories go when it is gone. A restart keeps the token in `state/`, as a reboot does.
 */
import { Alarm } from "../../agent/alarm.ts";
import { AgentSocket } from "../../agent/socket_client.ts";
import { SimulatedTeam } from "../../agent/simulated_team.ts";
import { VmAgent } from "../../agent/vm_agent.ts";
import type { Compute } from "../../supabase/functions/_shared/compute/compute.ts";
import type { Sql } from "../../supabase/functions/_shared/db.ts";
import { describeError, type Logger } from "../../supabase/functions/_shared/log.ts";
import { newBootstrapCredential } from "../../supabase/functions/_shared/reporter_token.ts";
import { exists } from "./exists.ts";

const POWER_POLL_MS = 250;

export interface LocalFleetDeps {
  sql: Sql;
  compute: Compute;
  log: Logger;
  cycleMs: number;
  /** Where each VM's directories live (LOCAL_VM_ROOT). */
  vmRoot: string;
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
    this.#power(projectId, bootstrapCredential);
  }

  /**
   * Starts the runners once the reporter is listening, including for VMs that were up before this
   * process started: those that kept their token reboot with it; the others get new boot data.
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
      const dir = `${this.#deps.vmRoot}/${project_id}`;
      let credential = "";
      if (!(await exists(`${dir}/state/reporter_token.json`))) {
        const fresh = await newBootstrapCredential();
        await this.#deps.sql`
          select private.issue_bootstrap_credential(${project_id}, ${fresh.hash}, '1 hour')`;
        credential = fresh.plaintext;
      }
      this.#power(project_id, credential);
    }
  }

  /** Powers the VM on: its boot data written, a runner watching it. */
  #power(projectId: string, credential: string): void {
    this.#runners.set(
      projectId,
      new Runner(
        this.#deps,
        projectId,
        this.#bootData(projectId, credential),
        () => this.#runners.delete(projectId),
      ),
    );
  }

  async stop(): Promise<void> {
    await Promise.all([...this.#runners.values()].map((runner) => runner.stop()));
  }

  /** Writes the VM's boot data, as cloud-init does on a real VM (an empty credential keeps the one there). */
  async #bootData(projectId: string, credential: string): Promise<string> {
    const dir = `${this.#deps.vmRoot}/${projectId}`;
    await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
    const file = `${dir}/bootstrap.json`;
    const previous = credential ? undefined : await Deno.readTextFile(file).catch(() => undefined);
    await Deno.writeTextFile(
      file,
      JSON.stringify({
        project_id: projectId,
        reporter_url: this.#reporterUrl,
        bootstrap_credential: credential ||
          (previous ? JSON.parse(previous).bootstrap_credential : ""),
      }),
      { mode: 0o600 },
    );
    return dir;
  }
}

class Runner {
  readonly #done: Promise<void>;
  readonly #abort = new AbortController();
  readonly #alarm = new Alarm(this.#abort.signal);

  constructor(
    readonly deps: LocalFleetDeps,
    readonly projectId: string,
    dir: Promise<string>,
    onEnd: () => void,
  ) {
    this.#done = dir.then((d) => this.#run(d)).catch((error) =>
      deps.log.error("simulated VM failed", { project_id: projectId, ...describeError(error) })
    ).finally(onEnd);
  }

  /** Ends the runner at once, abandoning a cycle in progress (a VM losing power). */
  async stop(): Promise<void> {
    this.#abort.abort();
    await this.#done;
  }

  async #run(dir: string): Promise<void> {
    const { compute, log, cycleMs } = this.deps;
    const fields = { component: "local-vm", project_id: this.projectId };
    let vm: { agent: VmAgent; socket: AgentSocket; team: SimulatedTeam } | undefined;
    const powerOff = async () => {
      if (!vm) return;
      vm.socket.close();
      await vm.agent.stop();
      vm = undefined;
    };
    try {
      while (!this.#abort.signal.aborted) {
        try {
          const { state } = await compute.powerState(this.projectId);
          if (state === "gone" || state === "deleting") {
            await powerOff();
            await Deno.remove(dir, { recursive: true }).catch(() => {});
            return;
          }
          if (state !== "running") {
            await powerOff();
            await this.#sleep(POWER_POLL_MS);
            continue;
          }
          if (!vm) {
            const socket = new AgentSocket(`${dir}/state/agent.sock`);
            const team = new SimulatedTeam(socket, `${dir}/workspace`);
            const agent = new VmAgent({
              bootstrapFile: `${dir}/bootstrap.json`,
              stateDir: `${dir}/state`,
              workspace: `${dir}/workspace`,
              cycleMs,
              hook: team.hook,
              log: (level, msg, extra) => log[level](`vm-agent: ${msg}`, { ...fields, ...extra }),
            });
            await agent.start();
            vm = { agent, socket, team };
            await vm.team.boot();
            log.info("simulated VM booted", fields);
          } else {
            await vm.team.cycle();
          }
        } catch (error) {
          if (this.#abort.signal.aborted) return;
          log.warn("simulated team cycle failed", { ...fields, ...describeError(error) });
        }
        await this.#sleep(cycleMs);
      }
    } finally {
      await powerOff();
    }
  }

  #sleep(ms: number): Promise<void> {
    return this.#alarm.sleep(ms);
  }
}
