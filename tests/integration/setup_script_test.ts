/**
 * The repository's own programs as the runner runs them (contract §20, agent/team/environment/):
 * real bash, as a session user of its own when the tests run as root. A setup script that hangs
 * (with a child in the background) is cut at its limit, every process it started gone; one that
 * prints megabytes is kept to its last 20 lines, at most 4 KiB; a `depends-on` file changes the
 * hash, one outside the clone or behind a link hashes as missing.
 */
import assert from "node:assert/strict";
import { processesOf } from "../../agent/sandbox/processes.ts";
import {
  ensureSessionUser,
  handOver,
  removeSessionUsers,
  type SessionUser,
} from "../../agent/sandbox/session_users.ts";
import { runScript, TAIL_BYTES } from "../../agent/team/environment/run_script.ts";
import { setupNeed } from "../../agent/team/environment/setup.ts";

const ROOT = Deno.uid() === 0;

async function place(prefix: string): Promise<{ dir: string; user: SessionUser | undefined }> {
  const dir = await Deno.makeTempDir({ prefix: "setup-script-" });
  await Deno.chmod(dir, 0o755);
  const user = ROOT ? await ensureSessionUser(`${prefix}setup`) : undefined;
  if (user) await handOver(user, dir);
  return { dir, user };
}

Deno.test("a hung setup is cut at its limit with everything it started", async () => {
  const prefix = `t${crypto.randomUUID().slice(0, 6)}-`;
  const { dir, user } = await place(prefix);
  try {
    await Deno.writeTextFile(
      `${dir}/setup.sh`,
      "echo starting as $(id -un)\n(sleep 300 &) ; nohup sleep 300 >/dev/null 2>&1 &\nsleep 300\n",
    );
    const started = performance.now();
    const result = await runScript({
      args: ["setup.sh"],
      cwd: dir,
      env: { PATH: Deno.env.get("PATH")! },
      user,
      timeoutMs: 1_000,
    });
    assert.equal(result.exit_status, "timeout");
    assert.equal(result.ok, false);
    assert.ok(performance.now() - started < 30_000);
    assert.match(result.log_tail, /starting as /);
    assert.match(result.log_tail, /passed its time limit/);
    if (user) {
      assert.doesNotMatch(result.log_tail, /starting as root/);
      assert.deepEqual(await processesOf(user.uid), [], "nothing it started runs on");
    }
  } finally {
    if (ROOT) await removeSessionUsers(prefix);
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("megabytes of output are kept to the last 20 lines, 4 KiB at most", async () => {
  const prefix = `t${crypto.randomUUID().slice(0, 6)}-`;
  const { dir, user } = await place(prefix);
  try {
    const lines: string[] = [];
    const result = await runScript({
      // 200 000 lines of 40 characters: 8 MB; then a line without its newline, then 1 KiB lines.
      args: [
        "-c",
        'yes "0123456789012345678901234567890123456789" | head -n 200000; ' +
        'for i in $(seq 1 30); do printf "last %s %01024d\\n" $i 0; done; exit 4',
      ],
      cwd: dir,
      env: { PATH: Deno.env.get("PATH")! },
      user,
      timeoutMs: 60_000,
      onLine: (line) => lines.length < 5 && lines.push(line),
    });
    assert.equal(result.exit_status, "4");
    assert.ok(new TextEncoder().encode(result.log_tail).byteLength <= TAIL_BYTES);
    assert.match(result.log_tail, /last 30 0+$/);
    assert.doesNotMatch(result.log_tail, /0123456789012345678901234567890123456789/);
    assert.equal(lines[0], "0123456789012345678901234567890123456789", "lines come as they are");
  } finally {
    if (ROOT) await removeSessionUsers(prefix);
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("setup's hash: the script, the packages and the depends-on files in the clone", async () => {
  const dir = await Deno.makeTempDir({ prefix: "setup-hash-" });
  try {
    assert.equal(await setupNeed(dir, []), undefined, "no script, no packages: nothing to do");
    const onlyPackages = await setupNeed(dir, ["jq"]);
    assert.equal(onlyPackages?.script, undefined);
    await Deno.mkdir(`${dir}/.agents`);
    await Deno.writeTextFile(
      `${dir}/.agents/setup.sh`,
      "# agents:depends-on package-lock.json\n# agents:depends-on ../outside.txt\n" +
        "# agents:depends-on linked.txt\nnpm ci\n",
    );
    const first = (await setupNeed(dir, []))!.hash;
    assert.equal((await setupNeed(dir, []))!.hash, first, "the same clone, the same hash");
    assert.notEqual((await setupNeed(dir, ["jq"]))!.hash, first, "packages count");
    await Deno.writeTextFile(`${dir}/package-lock.json`, "{}");
    const withLock = (await setupNeed(dir, []))!.hash;
    assert.notEqual(withLock, first, "a depends-on file arriving counts");
    await Deno.writeTextFile(`${dir}/package-lock.json`, '{"v":2}');
    assert.notEqual((await setupNeed(dir, []))!.hash, withLock, "and its change");
    const now = (await setupNeed(dir, []))!.hash;
    // Files outside the clone are never read: through `..` or a link, they hash as missing.
    await Deno.writeTextFile(`${dir}/../outside.txt`, "secret").catch(() => {});
    await Deno.symlink("/etc/hostname", `${dir}/linked.txt`);
    assert.equal((await setupNeed(dir, []))!.hash, now);
  } finally {
    await Deno.remove(`${dir}/../outside.txt`).catch(() => {});
    await Deno.remove(dir, { recursive: true });
  }
});
