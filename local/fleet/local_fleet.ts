/**
 * The local driver's simulated VMs run what a real VM runs: the reference VM agent
 * (agent/vm_agent.ts, in this process to stay cheap with many VMs) with its real team
 * (agent/team/: Claude Code sessions against the model the options name), or, for the soak, a
 * traffic generator in its place. Each VM has its directories under
 * `${LOCAL_VM_ROOT}/<project_id>/` (contract §7): `bootstrap.json` (its boot data), `state/`
 * (token, spool, socket) and `workspace/` (persona files, inbox, board, the agents' clones). A
 * runner watches the VM's power state like its init system would: agent and team start when it
 * runs, stop when it stops, and its directories go when it is gone. A restart keeps the token in
 * `state/`, as a reboot does. A project without a repository gets a seeded one under
 * `${repoRoot}` before its VM's agent first asks for the manifest.
 */
import { Alarm } from "../../agent/alarm.ts";
import { AgentSocket } from "../../agent/socket_client.ts";
import { TeamRunner } from "../../agent/team/team_runner.ts";
import type { TeamSettings } from "../../agent/team/team_settings.ts";
import { VmAgent } from "../../agent/vm_agent.ts";
import { removeSessionUsers } from "../../agent/sandbox/session_users.ts";
import { ensureSampleRepository } from "./sample_repository.ts";
import { TeamTrafficGenerator } from "./team_traffic.ts";
import type { Compute } from "../../supabase/functions/_shared/compute/compute.ts";
import type { Sql } from "../../supabase/functions/_shared/db.ts";
import { describeError, type Logger } from "../../supabase/functions/_shared/log.ts";
import { newBootstrapCredential } from "../../supabase/functions/_shared/reporter_token.ts";
import { exists } from "../host/exists.ts";

const POWER_POLL_MS = 250;

export interface LocalFleetDeps {
  sql: Sql;
  compute: Compute;
  log: Logger;
  cycleMs: number;
  /** Where each VM's directories live (LOCAL_VM_ROOT). */
  vmRoot: string;
  /** The real team, or a traffic generator (soak, fleet measurements). */
  team: RealTeam | "traffic";
  /** Where the VMs' sockets are (the fleet makes it). */
  socketDir?: string;
  /** Where the VMs' agents keep their clones and homes when sessions run as their own user. */
  sessionsDir?: string;
}

/** What the real team's sessions need on this machine: its settings (team_settings.ts) and more. */
export interface RealTeam extends TeamSettings {
  claude: string;
  approvalTtlSeconds: number;
  /** Where projects without a repository get theirs. */
  repoRoot: string;
}

export class LocalFleet {
  readonly #deps: LocalFleetDeps;
  readonly #runners = new Map<string, Runner>();
  readonly #waiting = new Map<string, string>();
  #reporterUrl: string | undefined;

  constructor(deps: LocalFleetDeps) {
    // The VMs' sockets live apart from their state directories: a Unix socket's path holds at
    // most 107 bytes, and LOCAL_VM_ROOT may be deep (a clone's absolute path, say).
    // Run as root, the sessions run as a user of their own (contract §11a), who must reach the
    // agents' clones and homes: those live under /tmp, which every user passes through, whatever
    // the directories above LOCAL_VM_ROOT allow.
    const sessionsDir = Deno.uid() === 0
      ? Deno.makeTempDirSync({ dir: "/tmp", prefix: "vm-sessions-" })
      : undefined;
    if (sessionsDir) Deno.chmodSync(sessionsDir, 0o711);
    this.#deps = {
      ...deps,
      socketDir: Deno.makeTempDirSync({ dir: "/tmp", prefix: "vm-sock-" }),
      ...(sessionsDir ? { sessionsDir } : {}),
    };
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
    await Deno.remove(this.#deps.socketDir!, { recursive: true }).catch(() => {});
    if (this.#deps.sessionsDir) {
      await Deno.remove(this.#deps.sessionsDir, { recursive: true }).catch(() => {});
    }
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

  /**
   * The VMs share this host, so each has session users of its own (contract §19): the prefix
   * the team's settings give, then the project's first eight hex (`vm-1a2b3c4d-lead`).
   */
  get #userPrefix(): string | undefined {
    const { team } = this.deps;
    if (team === "traffic" || !team.sessionUserPrefix) return undefined;
    return `${team.sessionUserPrefix}${this.projectId.replaceAll("-", "").slice(0, 8)}-`;
  }

  /** Ends the runner at once, abandoning a cycle in progress (a VM losing power). */
  async stop(): Promise<void> {
    this.#abort.abort();
    await this.#done;
  }

  async #run(dir: string): Promise<void> {
    const { compute, log, cycleMs } = this.deps;
    const fields = { component: "local-vm", project_id: this.projectId };
    let vm: { agent: VmAgent; socket?: AgentSocket; traffic?: TeamTrafficGenerator } | undefined;
    const powerOff = async () => {
      if (!vm) return;
      vm.socket?.close();
      await vm.agent.stop();
      vm = undefined;
      // The VM's session users go with it: they do not outlive it on the developer's host.
      if (this.#userPrefix) await removeSessionUsers(this.#userPrefix);
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
            vm = await this.#boot(dir);
            log.info("simulated VM booted", fields);
          } else {
            await vm.traffic?.cycle();
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

  /** The VM's agent, with its real team or the traffic generator. */
  async #boot(dir: string) {
    const { log, cycleMs, team } = this.deps;
    const fields = { component: "local-vm", project_id: this.projectId };
    const agentLog = (level: "info" | "warn" | "error", msg: string, extra = {}) =>
      log[level](`vm-agent: ${msg}`, { ...fields, ...extra });
    const socketPath = `${this.deps.socketDir}/${this.projectId}.sock`;
    const options = {
      bootstrapFile: `${dir}/bootstrap.json`,
      stateDir: `${dir}/state`,
      socketPath,
      workspace: `${dir}/workspace`,
      cycleMs,
      log: agentLog,
    };
    if (team === "traffic") {
      const socket = new AgentSocket(socketPath);
      const traffic = new TeamTrafficGenerator(socket, `${dir}/workspace`);
      const agent = new VmAgent({ ...options, hook: traffic.hook });
      await agent.start();
      await traffic.boot();
      return { agent, socket, traffic };
    }
    await this.#ensureRepository(team.repoRoot);
    const agent = new VmAgent({
      ...options,
      team: (host) =>
        new TeamRunner({
          ...host,
          ...team,
          cycleMs,
          log: agentLog,
          ...(this.deps.sessionsDir
            ? { agentsDir: `${this.deps.sessionsDir}/${this.projectId}` }
            : {}),
          ...(this.#userPrefix ? { sessionUserPrefix: this.#userPrefix } : {}),
        }),
    });
    await agent.start();
    return { agent };
  }

  /** A project without a repository gets the seeded sample, named as its repository_url. */
  async #ensureRepository(repoRoot: string): Promise<void> {
    const { sql } = this.deps;
    const [project] = await sql<{ repository_url: string | null; repository_branch: string }[]>`
      select repository_url, repository_branch from public.projects where id = ${this.projectId}`;
    if (!project || project.repository_url) return;
    const path = await ensureSampleRepository(
      `${repoRoot}/${this.projectId}.git`,
      project.repository_branch,
    );
    await sql`update public.projects set repository_url = ${path}
      where id = ${this.projectId} and repository_url is null`;
  }

  #sleep(ms: number): Promise<void> {
    return this.#alarm.sleep(ms);
  }
}
