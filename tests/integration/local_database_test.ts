/**
 * The cluster `deno task start` keeps under `.local/` between runs must survive a crash of the
 * machine: it runs with PostgreSQL's durable settings. Throw-away clusters (tests, bench) may not.
 * Started as root from a clone in a directory closed to other users, `deno task start` keeps the
 * cluster where PostgreSQL's own user reaches it, says where beside its DB URL, and `deno task
 * reset` removes it.
 */
import assert from "node:assert/strict";
import { dirname } from "node:path";
import postgres from "postgres";
import { ensureClaudeCode } from "../../local/claude_code.ts";
import { exists } from "../../local/host/exists.ts";
import { openLocalDatabase } from "../../local/database/local_database.ts";
import { findPostgresBin, isClusterRunning } from "../../local/database/postgres_cluster.ts";

const DURABLE = ["fsync", "synchronous_commit", "full_page_writes"];

async function settings(url: string): Promise<Record<string, string>> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const rows = await sql<{ name: string; setting: string }[]>`
      select name, setting from pg_settings where name = any(${DURABLE})`;
    return Object.fromEntries(rows.map((r) => [r.name, r.setting]));
  } finally {
    await sql.end();
  }
}

Deno.test("the kept local cluster runs durable; the throw-away test cluster need not", async () => {
  const dir = await Deno.makeTempDir({ prefix: "vm-service-local-" });
  const database = await openLocalDatabase(() => {}, `${dir}/postgres`);
  try {
    assert.ok(database.fresh);
    assert.deepEqual(await settings(database.url), {
      fsync: "on",
      full_page_writes: "on",
      synchronous_commit: "on",
    });
  } finally {
    await database.stop();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
  assert.equal((await settings(Deno.env.get("TEST_DATABASE_URL")!)).fsync, "off");
});

const REPOSITORY = new URL("../../", import.meta.url).pathname;

Deno.test({
  name: "as root, a clone in a closed directory starts: the cluster lives under /var/tmp, reset " +
    "removes it",
  ignore: Deno.uid() !== 0,
  async fn() {
    // A clone in a `mktemp -d` (0700, root's): PostgreSQL's user cannot pass through it.
    const closed = await Deno.makeTempDir({ prefix: "vm-service-closed-" });
    assert.equal((await Deno.stat(closed)).mode! & 0o777, 0o700);
    const clone = `${closed}/clone`;
    await copyWorkingTree(clone);
    const link = `${clone}/.local/postgres`;
    const env = {
      PATH: Deno.env.get("PATH")!,
      HOME: Deno.env.get("HOME")!,
      ...(Deno.env.has("DENO_DIR") ? { DENO_DIR: Deno.env.get("DENO_DIR")! } : {}),
      // The CLI this checkout installed, rather than an install into the clone from the registry.
      CLAUDE_CODE_BIN: await ensureClaudeCode(`${REPOSITORY}.local/claude-code`),
      PORT: "0",
      RECONCILE_INTERVAL_MS: "3600000",
    };
    try {
      const start = await runUntilReady(clone, env);
      const files = start.match(/DB URL: +postgres:\/\/\S+ \(files: (\S+)\)/)?.[1];
      assert.ok(files, `start printed no DB URL with its files:\n${start}`);
      assert.match(files, /^\/var\/tmp\/vm-service-postgres-[^/]+\/postgres$/);
      assert.equal(await Deno.readLink(link), files, ".local/postgres links to the files");
      const postgresUid = Number(await text("id", ["-u", "postgres"]));
      assert.equal((await Deno.stat(files)).uid, postgresUid, "the files are PostgreSQL's user's");
      assert.equal((await Deno.stat(closed)).mode! & 0o777, 0o700, "the clone's parent stays shut");
      assert.equal(await isClusterRunning(files), false, "start stopped its cluster");

      const reset = await new Deno.Command("deno", {
        args: ["run", "-A", "scripts/reset.ts"],
        cwd: clone,
        clearEnv: true,
        env,
      }).output();
      const said = new TextDecoder().decode(reset.stdout) + new TextDecoder().decode(reset.stderr);
      assert.ok(reset.success, said);
      assert.ok(said.includes(`removed the stopped cluster's files: ${files}`), said);
      assert.equal(await exists(dirname(files)), false, "reset removed the files");
      const fresh = said.match(/database files: (\S+)/)?.[1];
      if (!fresh) assert.fail(`reset did not say where the new files are:\n${said}`);
      assert.ok(fresh.startsWith("/var/tmp/vm-service-postgres-") && fresh !== files, said);
      assert.ok(said.includes("database reset"), said);
      assert.equal(await isClusterRunning(fresh), false, "reset stopped its cluster");
    } finally {
      const files = await Deno.readLink(link).catch(() => undefined);
      if (files && (await isClusterRunning(files))) {
        await new Deno.Command("runuser", {
          args: ["-u", "postgres", "--", `${await findPostgresBin()}/pg_ctl`, "-D", files, "stop"],
        }).output();
      }
      if (files) await Deno.remove(dirname(files), { recursive: true }).catch(() => {});
      await Deno.remove(closed, { recursive: true });
    }
  },
});

/** What `git clone` of this checkout would hold, with its uncommitted changes, and the built
 * dashboard (modification times kept, so the clone's start finds it fresh). */
async function copyWorkingTree(to: string): Promise<void> {
  await Deno.mkdir(to);
  const files = await text("git", ["ls-files", "-co", "--exclude-standard"], REPOSITORY);
  const list = [...files.split("\n").filter((f) => f !== ""), "dashboard/dist"].join("\0");
  const tar = new Deno.Command("sh", {
    args: [
      "-c",
      `tar -C '${REPOSITORY}' --null --ignore-failed-read -cf - -T - | tar -C '${to}' -xf -`,
    ],
    stdin: "piped",
    stderr: "piped",
  }).spawn();
  const writer = tar.stdin.getWriter();
  await writer.write(new TextEncoder().encode(list));
  await writer.close();
  const { success } = await tar.output();
  assert.ok(success, "the working tree could not be copied");
}

/** `deno task start`'s program in `cwd` until it says ready (then SIGTERM): what it printed. */
async function runUntilReady(cwd: string, env: Record<string, string>): Promise<string> {
  const child = new Deno.Command("deno", {
    args: ["run", "-A", "scripts/start.ts"],
    cwd,
    clearEnv: true,
    env,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let printed = "";
  const ready = Promise.all([child.stdout, child.stderr].map(async (stream) => {
    for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
      printed += chunk;
      if (/\[start\] ready: /.test(printed)) child.kill("SIGTERM");
    }
  }));
  const status = await child.status;
  await ready;
  assert.ok(
    /\[start\] ready: /.test(printed),
    `start did not get ready (${status.code}):\n${printed}`,
  );
  return printed;
}

async function text(program: string, args: string[], cwd?: string): Promise<string> {
  const out = await new Deno.Command(program, { args, ...(cwd ? { cwd } : {}) }).output();
  assert.ok(out.success, `${program} ${args.join(" ")} failed`);
  return new TextDecoder().decode(out.stdout).trim();
}
