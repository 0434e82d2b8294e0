#!/usr/bin/env bash
# Installs the VM agent and its team on a Debian or Ubuntu machine that becomes the VM image
# (run it as root on a build VM, then capture it; or as a Packer shell provisioner):
#   - git, procps (`ps`: a session's processes end with it) and util-linux (`setpriv`: sessions run
#     as their agents' own users), and Node.js with npm (only to install the two npm packages below);
#   - Deno 2.9.6 from npm as /usr/local/bin/deno, Claude Code (pinned) as /usr/local/bin/claude;
#   - no session user: the agent (root) creates one per agent, `vm-<agent>`, at its first session
#     (AGENT_SESSION_USER_PREFIX; contract §19, docs/vm-agent.md);
#   - under /opt/vm-agent: the agent (agent/), scripts/agent.ts, the contract it validates with
#     (supabase/functions/_contract/: schemas only, no SQL, no server code), a deno.json naming
#     only the npm packages these import (pinned as import_map.json pins them), and those cached
#     in /opt/vm-agent/deno-dir, so a VM boots without fetching code;
#   - the unit deploy/vm-agent.service, enabled by the boot data (cloud-init) when a VM starts.
#
# ROOT=<dir> lays the files out under <dir> instead of / and installs no packages and no user:
# the tests build an image tree that way and run the agent from it.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
ROOT=${ROOT:-}
DENO_VERSION=2.9.6
CLAUDE_VERSION=$(sed -n 's/^export const CLAUDE_CODE_VERSION = "\(.*\)";$/\1/p' "$SRC/agent/team/claude_cli.ts")
OPT="$ROOT/opt/vm-agent"

if [ -z "$ROOT" ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq git ca-certificates procps util-linux nodejs npm >/dev/null
  npm install -g --no-fund --no-audit --prefix /usr/local "deno@$DENO_VERSION" \
    "@anthropic-ai/claude-code@$CLAUDE_VERSION"
fi

rm -rf "$OPT"
mkdir -p "$OPT/scripts" "$OPT/supabase/functions" "$ROOT/etc/systemd/system"
cp -R "$SRC/agent" "$OPT/agent"
cp -R "$SRC/supabase/functions/_contract" "$OPT/supabase/functions/_contract"
cp "$SRC/scripts/agent.ts" "$OPT/scripts/agent.ts"
find "$OPT" -name '*_test.ts' -delete
# The image's import map: the repository's pins, only for what the agent imports (the approval
# hook's shell parser and its WASM among them, read as bytes: the repository's `unstable` too).
deno eval --quiet '
  const [src, opt] = Deno.args;
  const all = JSON.parse(Deno.readTextFileSync(`${src}/import_map.json`)).imports;
  const { unstable } = JSON.parse(Deno.readTextFileSync(`${src}/deno.json`));
  const imports = {};
  const names = ["zod", "shell-quote", "picomatch", "web-tree-sitter", "web-tree-sitter/",
    "tree-sitter-bash/"];
  for (const name of names) imports[name] = all[name];
  Deno.writeTextFileSync(`${opt}/deno.json`, JSON.stringify({ unstable, imports }, null, 2) + "\n");
' "$SRC" "$OPT"
cp "$SRC/deploy/vm-agent.service" "$ROOT/etc/systemd/system/vm-agent.service"

# Every module the agent and the approval hook import, cached for a VM with no npm access at boot.
DENO_DIR="$OPT/deno-dir" deno cache --quiet --config "$OPT/deno.json" \
  "$OPT/scripts/agent.ts" "$OPT/agent/team/approval_hook.ts"

if [ -z "$ROOT" ]; then
  systemctl daemon-reload
  claude --version
fi
echo "vm image: agent in $OPT, Claude Code $CLAUDE_VERSION, Deno $DENO_VERSION"
