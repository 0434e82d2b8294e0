/**
 * `deno task agent`: the reference VM agent (agent/vm_agent.ts) as a daemon, until SIGINT or
 * SIGTERM. Flags (contract §7): --bootstrap <file> (default /etc/vm-agent/bootstrap.json),
 * --state-dir <dir> (default /var/lib/vm-agent), --workspace <dir> (default /srv/agents); and
 * --hook <program> run for start/stop/restart_agents, --cycle-ms <ms> (default 30000).
 */
import { parseArgs } from "node:util";
import { programHook } from "../agent/command_handlers.ts";
import { VmAgent } from "../agent/vm_agent.ts";
import { BOOT_CONFIG_PATH } from "../supabase/functions/_contract/defaults.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    bootstrap: { type: "string", default: BOOT_CONFIG_PATH },
    "state-dir": { type: "string", default: "/var/lib/vm-agent" },
    workspace: { type: "string", default: "/srv/agents" },
    hook: { type: "string" },
    "cycle-ms": { type: "string", default: "30000" },
  },
});
const cycleMs = Number(values["cycle-ms"]);
if (!Number.isInteger(cycleMs) || cycleMs < 100) {
  console.error("--cycle-ms must be an integer of at least 100");
  Deno.exit(2);
}

const agent = new VmAgent({
  bootstrapFile: values.bootstrap,
  stateDir: values["state-dir"],
  workspace: values.workspace,
  cycleMs,
  ...(values.hook ? { hook: programHook(values.hook) } : {}),
  log: (level, msg, fields = {}) => {
    const line = JSON.stringify({ time: new Date().toISOString(), level, msg, ...fields });
    if (level === "info") console.log(line);
    else console.error(line);
  },
});
await agent.start();
console.log(JSON.stringify({ level: "info", msg: "vm-agent running", socket: agent.socketPath }));

let stopping = false;
const stop = async () => {
  if (stopping) Deno.exit(1);
  stopping = true;
  await agent.stop();
  Deno.exit(0);
};
Deno.addSignalListener("SIGINT", stop);
Deno.addSignalListener("SIGTERM", stop);
