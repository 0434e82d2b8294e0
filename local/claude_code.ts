/**
 * The Claude Code CLI for the local stack and the tests: the pinned version
 * (agent/team/claude_cli.ts) installed with npm into a prefix of ours (`.local/claude-code`)
 * when it is not there yet, so the team's sessions run the same CLI everywhere. The registry
 * package's postinstall puts the native binary in place of its bin stub; the answer is that
 * binary's absolute path. `CLAUDE_CODE_BIN` names a binary to use instead, as is.
 *
 * Two processes may ask at once (start and a test): the install runs under an exclusive lock on
 * a file in the prefix, and whoever waited finds the version installed and verified.
 */
import { resolve } from "node:path";
import { CLAUDE_CODE_PACKAGE, CLAUDE_CODE_VERSION } from "../agent/team/claude_cli.ts";

const PACKAGE = `${CLAUDE_CODE_PACKAGE}@${CLAUDE_CODE_VERSION}`;

export async function ensureClaudeCode(root = ".local/claude-code"): Promise<string> {
  const override = Deno.env.get("CLAUDE_CODE_BIN");
  if (override) {
    const info = await Deno.stat(override).catch(() => undefined);
    if (!info?.isFile) throw new Error(`CLAUDE_CODE_BIN is ${override}, which is not a file.`);
    return resolve(override);
  }
  const prefix = resolve(root);
  const ready = await verified(prefix);
  if (ready) return ready;

  await Deno.mkdir(prefix, { recursive: true });
  using lock = await Deno.open(`${prefix}/.install.lock`, { create: true, write: true });
  await lock.lock(true);
  try {
    // Someone else may have installed it while this process waited for the lock.
    const installed = await verified(prefix);
    if (installed) return installed;
    await install(prefix);
    const bin = binary(prefix);
    const version = await versionOf(bin);
    if (!version?.includes(CLAUDE_CODE_VERSION)) {
      throw new Error(
        `The Claude Code CLI installed at ${bin} does not run: \`claude --version\` printed ` +
          `${JSON.stringify(version ?? "nothing")} instead of ${CLAUDE_CODE_VERSION}.`,
      );
    }
    return await Deno.realPath(bin);
  } finally {
    await lock.unlock();
  }
}

function binary(prefix: string): string {
  return `${prefix}/node_modules/.bin/claude`;
}

/** The binary's real path when the pinned version is installed and answers `--version`. */
async function verified(prefix: string): Promise<string | undefined> {
  const manifest = `${prefix}/node_modules/${CLAUDE_CODE_PACKAGE}/package.json`;
  const version = await Deno.readTextFile(manifest)
    .then((text) => (JSON.parse(text) as { version?: unknown }).version, () => undefined);
  if (version !== CLAUDE_CODE_VERSION) return undefined;
  const printed = await versionOf(binary(prefix));
  if (!printed?.includes(CLAUDE_CODE_VERSION)) return undefined;
  return await Deno.realPath(binary(prefix));
}

/** What `claude --version` prints, or undefined when it does not run. */
async function versionOf(bin: string): Promise<string | undefined> {
  try {
    const { success, stdout } = await new Deno.Command(bin, {
      args: ["--version"],
      stdin: "null",
      stdout: "piped",
      stderr: "null",
      env: { DISABLE_AUTOUPDATER: "1" },
    }).output();
    return success ? new TextDecoder().decode(stdout).trim() : undefined;
  } catch {
    return undefined;
  }
}

/** A fresh install of the pinned version (a half-done one is removed first). */
async function install(prefix: string): Promise<void> {
  await Deno.remove(`${prefix}/node_modules`, { recursive: true }).catch(() => {});
  await Deno.remove(`${prefix}/package-lock.json`).catch(() => {});
  // The package's postinstall swaps the native binary in; npm runs only approved scripts.
  await Deno.writeTextFile(
    `${prefix}/package.json`,
    JSON.stringify(
      {
        private: true,
        description: "The Claude Code CLI of the local stack (local/claude_code.ts)",
        dependencies: { [CLAUDE_CODE_PACKAGE]: CLAUDE_CODE_VERSION },
        allowScripts: { [PACKAGE]: true },
      },
      null,
      2,
    ) + "\n",
  );
  let output: Deno.CommandOutput;
  try {
    output = await new Deno.Command("npm", {
      args: ["install", "--prefix", prefix, "--no-audit", "--no-fund", "--loglevel=error"],
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) {
      throw new Error(`npm is missing: install Node.js and npm to install ${PACKAGE}.`);
    }
    throw error;
  }
  if (!output.success) {
    const said = new TextDecoder().decode(output.stderr).trim().split("\n").slice(-5).join(" ");
    throw new Error(`npm could not install ${PACKAGE} into ${prefix}: ${said}`);
  }
}
