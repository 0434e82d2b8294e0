/**
 * `deno task agent`: the reference VM agent (agent/vm_agent.ts) and its team (agent/team/) as
 * one daemon, until SIGINT or SIGTERM. Flags (contract §7): --bootstrap <file> (default
 * /etc/vm-agent/bootstrap.json), --state-dir <dir> (default /var/lib/vm-agent), --workspace <dir>
 * (default /srv/agents); and --cycle-ms <ms> (default 30000), --claude <path> (the Claude Code
 * CLI; default `claude` on PATH), --approval-ttl-seconds (default 1800). The environment:
 * ANTHROPIC_BASE_URL (every session's model endpoint), ANTHROPIC_API_KEY (unless the project has
 * that secret), AGENT_DEFAULT_MODEL, AGENT_FALLBACK_MODEL, AGENT_MAX_TURNS,
 * AGENT_SESSION_TIMEOUT_MINUTES and AGENT_SESSION_USER_PREFIX (as root, agent X's sessions run as
 * the user `<prefix>X`, default `vm-X`; docs/vm-agent.md).
 */
import { parseArgs } from "node:util";
import { VmAgent } from "../agent/vm_agent.ts";
import { TeamRunner } from "../agent/team/team_runner.ts";
import { BOOT_CONFIG_PATH } from "../supabase/functions/_contract/defaults.ts";
import { DEFAULT_APPROVAL_TTL_SECONDS, teamSettings } from "../agent/team/team_settings.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    bootstrap: { type: "string", default: BOOT_CONFIG_PATH },
    "state-dir": { type: "string", default: "/var/lib/vm-agent" },
    workspace: { type: "string", default: "/srv/agents" },
    "cycle-ms": { type: "string", default: "30000" },
    claude: { type: "string", default: "claude" },
    "approval-ttl-seconds": { type: "string", default: String(DEFAULT_APPROVAL_TTL_SECONDS) },
  },
});
const positive = (flag: keyof typeof values, min: number): number => {
  const value = Number(values[flag]);
  if (!Number.isInteger(value) || value < min) {
    console.error(`--${flag} must be an integer of at least ${min}`);
    Deno.exit(2);
  }
  return value;
};
const cycleMs = positive("cycle-ms", 100);
const log = (level: "info" | "warn" | "error", msg: string, fields = {}) => {
  const line = JSON.stringify({ time: new Date().toISOString(), level, msg, ...fields });
  if (level === "info") console.log(line);
  else console.error(line);
};

const agent = new VmAgent({
  bootstrapFile: values.bootstrap,
  stateDir: values["state-dir"],
  workspace: values.workspace,
  cycleMs,
  team: (host) =>
    new TeamRunner({
      ...host,
      ...teamSettings(Deno.env.toObject()),
      claude: values.claude,
      cycleMs,
      approvalTtlSeconds: positive("approval-ttl-seconds", 60),
      log,
    }),
  log,
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
