/**
 * ensureClaudeCode() against the real npm registry package: one install into a temp prefix by two
 * processes at once, the pinned version answering `--version`, the install reused; the
 * `CLAUDE_CODE_BIN` override; and the one sentence a machine without npm gets.
 */
import assert from "node:assert/strict";
import { CLAUDE_CODE_PACKAGE, CLAUDE_CODE_VERSION } from "../../agent/team/claude_cli.ts";

const MODULE = new URL("../../local/claude_code.ts", import.meta.url).href;

/** ensureClaudeCode(root) in a process of its own: the path it answers, or its error. */
async function ensureInProcess(
  root: string,
  env: Record<string, string> = {},
): Promise<{ ok: boolean; out: string }> {
  const inherited = Deno.env.toObject();
  delete inherited.CLAUDE_CODE_BIN;
  const { success, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: [
      "eval",
      `import { ensureClaudeCode } from ${JSON.stringify(MODULE)};
       try { console.log(await ensureClaudeCode(${JSON.stringify(root)})); }
       catch (error) { console.error(error.message); Deno.exit(1); }`,
    ],
    env: { ...inherited, ...env },
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(success ? stdout : stderr).trim();
  return { ok: success, out: text };
}

Deno.test("ensureClaudeCode() installs the pinned CLI once for two processes at once, then reuses it", async () => {
  const root = await Deno.makeTempDir({ prefix: "claude-code-install-" });
  try {
    const [first, second] = await Promise.all([ensureInProcess(root), ensureInProcess(root)]);
    assert.ok(first.ok, first.out);
    assert.ok(second.ok, second.out);
    assert.equal(first.out, second.out);
    const bin = first.out;
    assert.ok(bin.startsWith(`${root}/node_modules/`), bin);
    // The native binary the bin link points at, not the link.
    assert.equal(await Deno.realPath(bin), bin);
    assert.equal(await Deno.realPath(`${root}/node_modules/.bin/claude`), bin);

    const version = await new Deno.Command(bin, { args: ["--version"], stdout: "piped" }).output();
    assert.match(new TextDecoder().decode(version.stdout), new RegExp(`^${CLAUDE_CODE_VERSION} `));
    const manifest = `${root}/node_modules/${CLAUDE_CODE_PACKAGE}/package.json`;
    assert.equal(JSON.parse(await Deno.readTextFile(manifest)).version, CLAUDE_CODE_VERSION);

    const installedAt = (await Deno.stat(manifest)).mtime;
    const again = await ensureInProcess(root);
    assert.deepEqual(again, first);
    assert.deepEqual((await Deno.stat(manifest)).mtime, installedAt, "installed a second time");
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("ensureClaudeCode() uses CLAUDE_CODE_BIN as it is, and refuses one that is not a file", async () => {
  const root = await Deno.makeTempDir({ prefix: "claude-code-override-" });
  try {
    assert.deepEqual(await ensureInProcess(root, { CLAUDE_CODE_BIN: "/bin/true" }), {
      ok: true,
      out: "/bin/true",
    });
    assert.deepEqual(await ensureInProcess(root, { CLAUDE_CODE_BIN: `${root}/nothing` }), {
      ok: false,
      out: `CLAUDE_CODE_BIN is ${root}/nothing, which is not a file.`,
    });
    assert.deepEqual([...Deno.readDirSync(root)], [], "installed despite the override");
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("ensureClaudeCode() without npm on the PATH says so in one sentence", async () => {
  const root = await Deno.makeTempDir({ prefix: "claude-code-no-npm-" });
  try {
    assert.deepEqual(await ensureInProcess(root, { PATH: `${root}/empty` }), {
      ok: false,
      out: `npm is missing: install Node.js and npm to install ` +
        `${CLAUDE_CODE_PACKAGE}@${CLAUDE_CODE_VERSION}.`,
    });
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
