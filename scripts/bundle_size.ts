/**
 * `deno task bundle-size`: each function's module graph size against the 20 MB limit hosted
 * Supabase sets on a deployed function's bundle. Measured from `deno info --json`: the local
 * modules the entry point reaches, plus every npm package it reaches (directly or through another
 * package) at its unpacked size: the edge runtime's bundle carries npm packages as a virtual file
 * system of their files, so the unpacked size is what the bundle holds before compression. The
 * gzip column estimates the compressed upload. A function over the limit is marked, and the task
 * exits 1, so a dependency that breaks deploy is caught before deploy.
 */
import { gzipSync } from "node:zlib";

const FUNCTIONS_DIR = new URL("../supabase/functions/", import.meta.url);
const LIMIT_BYTES = 20 * 1024 * 1024;

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
  /** Every local module and npm package file, gzipped one by one. */
  gzipBytes: number;
  packages: string[];
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
  let gzipBytes = 0;
  for (const m of local) gzipBytes += await gzippedBytes(new URL(m.specifier).pathname);
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
      npmBytes += (await Deno.stat(file)).size;
      gzipBytes += await gzippedBytes(file);
    }
  }
  return { localBytes, npmBytes, gzipBytes, packages: [...reached].sort() };
}

async function* filesUnder(path: string): AsyncGenerator<string> {
  for await (const entry of Deno.readDir(path)) {
    const child = `${path}/${entry.name}`;
    if (entry.isDirectory) yield* filesUnder(child);
    else if (entry.isFile) yield child;
  }
}

async function gzippedBytes(path: string): Promise<number> {
  return gzipSync(await Deno.readFile(path)).length;
}

const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(2);

if (import.meta.main) {
  const names: string[] = [];
  for await (const entry of Deno.readDir(FUNCTIONS_DIR)) {
    if (entry.isDirectory && !entry.name.startsWith("_")) names.push(entry.name);
  }
  let over = false;
  console.log("| function | local MB | npm MB | total MB | gzip MB | limit MB | npm packages |");
  console.log("| --- | ---: | ---: | ---: | ---: | ---: | --- |");
  for (const name of names.sort()) {
    const size = await graphSize(new URL(`${name}/index.ts`, FUNCTIONS_DIR).pathname);
    const total = size.localBytes + size.npmBytes;
    over ||= total > LIMIT_BYTES;
    const packages = size.packages.length > 6
      ? `${size.packages.length} packages`
      : size.packages.map((p) => p.replace(/@[^@]+$/, "")).join(", ");
    console.log(
      `| ${name} | ${mb(size.localBytes)} | ${mb(size.npmBytes)} | ${mb(total)}${
        total > LIMIT_BYTES ? " (over)" : ""
      } | ${mb(size.gzipBytes)} | ${mb(LIMIT_BYTES)} | ${packages} |`,
    );
  }
  Deno.exit(over ? 1 : 0);
}
