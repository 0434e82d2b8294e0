/**
 * `deno task bundle-size`: what each function uploads when it is deployed, against the limits
 * hosted Supabase sets on it. The CLI bundles a function into an eszip (the local modules and, as
 * a virtual file system, every file of the npm packages the graph reaches), then uploads it
 * compressed: the "EZBR" magic and a brotli stream (supabase/cli, pkg/function/bundle.go,
 * `Compress`, andybalholm/brotli's default writer: quality 6, window 2^22), the figure it prints as
 * `Deploying Function: <name> (script size: ...)` (pkg/function/batch.go). That compressed size is
 * what the limits apply to: 20 MB when the CLI bundles locally, 5 MB when the Management API
 * bundles server-side (`--use-api`, or the Dashboard). Measured here from `deno info --json`:
 * the same files, concatenated and compressed the same way. A function over the local limit is
 * marked and the task exits 1, so a dependency that breaks deploy is caught before deploy; the
 * server-side column says which functions that path cannot take.
 */
import { brotliCompressSync, constants } from "node:zlib";

const FUNCTIONS_DIR = new URL("../supabase/functions/", import.meta.url);
/** Megabytes as the CLI prints them (go-units HumanSize: decimal). */
const MB = 1000 * 1000;
export const LOCAL_BUNDLING_LIMIT = 20 * MB;
export const SERVER_SIDE_BUNDLING_LIMIT = 5 * MB;
const MAGIC = new TextEncoder().encode("EZBR");

interface ModuleInfo {
  kind: string;
  specifier: string;
  size?: number;
  npmPackage?: string;
}
interface GraphInfo {
  modules: ModuleInfo[];
  npmPackages: Record<string, { dependencies: string[]; localPath?: string }>;
}

export interface GraphSize {
  localBytes: number;
  npmBytes: number;
  /** What the CLI uploads: "EZBR" + brotli (quality 6, window 2^22) of everything the bundle holds. */
  uploadBytes: number;
  packages: string[];
}

/** Where a function's upload stands against each deploy path's limit. */
export function deployVerdict(uploadBytes: number): { local: boolean; serverSide: boolean } {
  return {
    local: uploadBytes <= LOCAL_BUNDLING_LIMIT,
    serverSide: uploadBytes <= SERVER_SIDE_BUNDLING_LIMIT,
  };
}

export async function graphSize(entry: string): Promise<GraphSize> {
  const { stdout, success, stderr } = await new Deno.Command("deno", {
    args: ["info", "--json", entry],
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!success) throw new Error(`deno info ${entry} failed: ${new TextDecoder().decode(stderr)}`);
  const graph = JSON.parse(new TextDecoder().decode(stdout)) as GraphInfo;

  const local = graph.modules.filter((m) => m.specifier.startsWith("file:"));
  const localBytes = local.reduce((sum, m) => sum + (m.size ?? 0), 0);
  const contents: Uint8Array[] = [];
  for (const m of local) contents.push(await Deno.readFile(new URL(m.specifier).pathname));
  // The lockfile's packages are all listed; only those the graph reaches count.
  const reached = new Set<string>();
  const queue = graph.modules.flatMap((m) => (m.npmPackage ? [m.npmPackage] : []));
  while (queue.length > 0) {
    const name = queue.pop()!;
    if (reached.has(name)) continue;
    reached.add(name);
    queue.push(...(graph.npmPackages[name]?.dependencies ?? []));
  }
  let npmBytes = 0;
  for (const name of reached) {
    const path = graph.npmPackages[name]?.localPath;
    if (!path) continue;
    for await (const file of filesUnder(path)) {
      const bytes = await Deno.readFile(file);
      npmBytes += bytes.length;
      contents.push(bytes);
    }
  }
  return {
    localBytes,
    npmBytes,
    uploadBytes: MAGIC.length + compressedLikeTheCli(contents).length,
    packages: [...reached].sort(),
  };
}

/** One brotli stream over all the files, as the CLI compresses the one eszip that holds them. */
function compressedLikeTheCli(contents: Uint8Array[]): Uint8Array {
  const all = new Uint8Array(contents.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of contents) {
    all.set(c, at);
    at += c.length;
  }
  return brotliCompressSync(all, {
    params: {
      [constants.BROTLI_PARAM_QUALITY]: 6,
      [constants.BROTLI_PARAM_LGWIN]: 22,
      [constants.BROTLI_PARAM_SIZE_HINT]: all.length,
    },
  });
}

async function* filesUnder(path: string): AsyncGenerator<string> {
  for await (const entry of Deno.readDir(path)) {
    const child = `${path}/${entry.name}`;
    if (entry.isDirectory) yield* filesUnder(child);
    else if (entry.isFile) yield child;
  }
}

const mb = (bytes: number) => (bytes / MB).toFixed(2);

if (import.meta.main) {
  const names: string[] = [];
  for await (const entry of Deno.readDir(FUNCTIONS_DIR)) {
    if (entry.isDirectory && !entry.name.startsWith("_")) names.push(entry.name);
  }
  let over = false;
  console.log(
    "| function | unpacked MB | script size MB (upload) | CLI, local bundling (20 MB) | " +
      "server-side bundling (5 MB) | npm packages |",
  );
  console.log("| --- | ---: | ---: | --- | --- | --- |");
  for (const name of names.sort()) {
    const size = await graphSize(new URL(`${name}/index.ts`, FUNCTIONS_DIR).pathname);
    const verdict = deployVerdict(size.uploadBytes);
    over ||= !verdict.local;
    const packages = size.packages.length > 6
      ? `${size.packages.length} packages`
      : size.packages.map((p) => p.replace(/@[^@]+$/, "")).join(", ");
    console.log(
      `| ${name} | ${mb(size.localBytes + size.npmBytes)} | ${mb(size.uploadBytes)} | ` +
        `${verdict.local ? "fits" : "OVER"} | ${verdict.serverSide ? "fits" : "over"} | ` +
        `${packages} |`,
    );
  }
  Deno.exit(over ? 1 : 0);
}
