/**
 * A private PostgreSQL cluster built from the machine's server binaries, for `deno task start`
 * (persistent, under `.local/`) and `deno task test` (throw-away, in a temporary directory).
 *
 * PostgreSQL refuses to run as root, so when this process is root every server command runs as an
 * unprivileged user (`postgres` from Debian's package, else `nobody`) that owns the data directory.
 */
import { freePort } from "../host/free_port.ts";

export interface Cluster {
  /** Superuser connection URL (trust authentication, loopback only). */
  url: string;
  port: number;
  dataDir: string;
  /** Stops the server if this process started it; a cluster found running is left alone. */
  stop(): Promise<void>;
}

export interface ClusterOptions {
  dataDir: string;
  /** Port to prefer; a free one is chosen when it is taken. */
  preferredPort?: number;
  /** Serve TLS (ssl=on) with this certificate and key (PEM), e.g. to test `sslmode` clients. */
  tls?: { cert: string; key: string };
  /**
   * Extra server settings (`-c name=value`), e.g. to preload pg_stat_statements for the bench, or
   * `fsync: "off"` for a throw-away cluster. Without them the server is as durable as PostgreSQL's
   * defaults make it: a cluster whose data is kept must survive a crash of the machine.
   */
  settings?: Record<string, string>;
  log?: (line: string) => void;
}

const MIN_MAJOR = 15;

export async function findPostgresBin(): Promise<string> {
  const candidates: string[] = [];
  try {
    for await (const entry of Deno.readDir("/usr/lib/postgresql")) {
      const major = Number(entry.name);
      if (entry.isDirectory && major >= MIN_MAJOR) candidates.push(entry.name);
    }
  } catch { /* not a Debian layout */ }
  candidates.sort((a, b) => Number(b) - Number(a));
  for (const major of candidates) {
    const dir = `/usr/lib/postgresql/${major}/bin`;
    if (await exists(`${dir}/initdb`)) return dir;
  }
  const fromPath = await which("initdb");
  if (fromPath) return fromPath.replace(/\/initdb$/, "");
  throw new Error(
    `PostgreSQL ${MIN_MAJOR}+ server binaries were not found. ` +
      `Install Debian's package "postgresql" (apt-get install postgresql), or set DATABASE_URL.`,
  );
}

/** The user PostgreSQL runs as: none of its own unless this process is root (see above). */
export async function serverUser(): Promise<string | undefined> {
  return Deno.uid() === 0 ? await unprivilegedUser() : undefined;
}

/** Whether `user` can pass through `path` (every directory down to it open to it). */
export async function reachableBy(user: string, path: string): Promise<boolean> {
  return (await output(["test", "-x", path], user)).success;
}

/** Whether a server runs on `dataDir` (this process's or another's). */
export async function isClusterRunning(dataDir: string): Promise<boolean> {
  return (await runningPort(await findPostgresBin(), dataDir, await serverUser())) !== undefined;
}

export async function startCluster(options: ClusterOptions): Promise<Cluster> {
  const log = options.log ?? (() => {});
  const bin = await findPostgresBin();
  const dataDir = options.dataDir;
  const runAs = await serverUser();

  await Deno.mkdir(dataDir, { recursive: true });
  if (runAs) {
    await run(["chown", "-R", runAs, dataDir]);
    // A temporary parent is created 0700 by root; the server's user must be able to pass through it.
    await run(["chmod", "o+x", `${dataDir}/..`]);
    // A directory further up may be closed to other users (root's home is 0700): say so in one
    // sentence rather than let initdb fail with a permission error. `deno task start` never
    // meets it: it keeps its cluster elsewhere then (local_database.ts).
    if (!(await reachableBy(runAs, dataDir))) {
      throw new Error(
        `PostgreSQL refuses to run as root, so it runs as the ${runAs} user, who cannot reach ` +
          `${dataDir}: a directory above it is closed to other users. Keep the cluster where ` +
          `other users may pass through (under /var/tmp, say), or set DATABASE_URL.`,
      );
    }
  }
  await Deno.chmod(dataDir, 0o700);

  if (!(await exists(`${dataDir}/PG_VERSION`))) {
    log(`initialising a PostgreSQL cluster in ${dataDir}`);
    await run(
      [
        `${bin}/initdb`,
        "-D",
        dataDir,
        "-U",
        "postgres",
        "--auth=trust",
        "-E",
        "UTF8",
        "--locale=C",
      ],
      runAs,
    );
  }

  if (options.tls) await installCertificate(dataDir, options.tls, runAs);

  const running = await runningPort(bin, dataDir, runAs);
  if (running !== undefined) {
    log(`reusing the PostgreSQL server already running on port ${running}`);
    return cluster(running, dataDir, async () => {});
  }

  const port = options.preferredPort !== undefined && isFree(options.preferredPort)
    ? options.preferredPort
    : freePort();
  const serverOptions = [
    `-p ${port}`,
    "-c listen_addresses=127.0.0.1",
    "-c unix_socket_directories=''",
    "-c max_connections=200",
    // Logical decoding, as hosted Supabase runs: the local Realtime server reads realtime.messages
    // through a (temporary) replication slot per server process.
    "-c wal_level=logical",
    "-c max_wal_senders=40",
    "-c max_replication_slots=40",
    ...(options.tls ? ["-c ssl=on"] : []),
    ...Object.entries(options.settings ?? {}).map(([name, value]) => `-c ${name}=${value}`),
  ].join(" ");
  await run(
    [
      `${bin}/pg_ctl`,
      "-D",
      dataDir,
      "-l",
      `${dataDir}/server.log`,
      "-o",
      serverOptions,
      "-w",
      "start",
    ],
    runAs,
  );
  return cluster(port, dataDir, async () => {
    await run([`${bin}/pg_ctl`, "-D", dataDir, "-m", "fast", "-w", "stop"], runAs);
  });
}

function cluster(port: number, dataDir: string, stop: () => Promise<void>): Cluster {
  return { url: `postgres://postgres@127.0.0.1:${port}/postgres`, port, dataDir, stop };
}

/** Where ssl=on looks by default: server.crt and server.key (0600, the server's) in the data dir. */
async function installCertificate(
  dataDir: string,
  tls: { cert: string; key: string },
  runAs: string | undefined,
): Promise<void> {
  await Deno.writeTextFile(`${dataDir}/server.crt`, tls.cert);
  await Deno.writeTextFile(`${dataDir}/server.key`, tls.key, { mode: 0o600 });
  await Deno.chmod(`${dataDir}/server.key`, 0o600);
  if (runAs) await run(["chown", runAs, `${dataDir}/server.crt`, `${dataDir}/server.key`]);
}

/** The port of a server already running on this data directory, if any. */
async function runningPort(
  bin: string,
  dataDir: string,
  runAs: string | undefined,
): Promise<number | undefined> {
  const status = await output([`${bin}/pg_ctl`, "-D", dataDir, "status"], runAs);
  if (!status.success) return undefined;
  const pidFile = await Deno.readTextFile(`${dataDir}/postmaster.pid`);
  const port = Number(pidFile.split("\n")[3]);
  return Number.isInteger(port) && port > 0 ? port : undefined;
}

async function unprivilegedUser(): Promise<string> {
  const passwd = await Deno.readTextFile("/etc/passwd");
  return /^postgres:/m.test(passwd) ? "postgres" : "nobody";
}

async function run(cmd: string[], runAs?: string): Promise<void> {
  const result = await output(cmd, runAs);
  if (!result.success) {
    throw new Error(`${cmd.join(" ")} failed:\n${result.stdout}${result.stderr}`);
  }
}

async function output(cmd: string[], runAs?: string) {
  const argv = runAs ? ["runuser", "-u", runAs, "--", ...cmd] : cmd;
  const [program, ...args] = argv as [string, ...string[]];
  const result = await new Deno.Command(program, { args, stdout: "piped", stderr: "piped" })
    .output();
  const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
  return { success: result.success, stdout: decode(result.stdout), stderr: decode(result.stderr) };
}

function isFree(port: number): boolean {
  try {
    Deno.listen({ hostname: "127.0.0.1", port }).close();
    return true;
  } catch {
    return false;
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch {
    return false;
  }
}

async function which(program: string): Promise<string | undefined> {
  for (const dir of (Deno.env.get("PATH") ?? "").split(":")) {
    if (dir && (await exists(`${dir}/${program}`))) return `${dir}/${program}`;
  }
  return undefined;
}
