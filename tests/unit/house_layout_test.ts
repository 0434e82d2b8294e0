/**
 * The folders say what they hold (docs/development.md, "Where things go"), and the arrows between
 * them go one way: what is deployed reaches nothing local, the local stack reaches no benchmark
 * or task, and only tests reach test helpers. Nothing lies at the root or in `tests/` that the
 * layout does not name, no two test files share a name, and no files import each other in a
 * circle. Read from what git holds (tracked files and new ones not ignored: what a task writes is
 * ignored) and from the import statements of every module.
 */
import assert from "node:assert/strict";

const root = new URL("../../", import.meta.url);
const IMPORT = /(?:from\s+|import\s*\(\s*|import\s+)["'](\.\.?\/[^"']+)["']/g;

/** The repository's files: tracked, and new ones .gitignore does not exclude (a deleted one not). */
async function repositoryFiles(): Promise<string[]> {
  const { success, stdout, stderr } = await new Deno.Command("git", {
    args: ["ls-files", "--cached", "--others", "--exclude-standard", "--deduplicate", "-z"],
    cwd: root,
  }).output();
  assert.ok(success, new TextDecoder().decode(stderr));
  const listed = new TextDecoder().decode(stdout).split("\0").filter((path) => path !== "");
  const present = await Promise.all(
    listed.map((path) => Deno.stat(new URL(path, root)).then(() => true, () => false)),
  );
  return listed.filter((_, i) => present[i]);
}

/** Every import of a relative module, as repository-relative paths. */
async function importsOf(modules: string[]): Promise<{ from: string; to: string }[]> {
  const found: { from: string; to: string }[] = [];
  for (const path of modules) {
    const text = await Deno.readTextFile(new URL(path, root));
    for (const [, specifier] of text.matchAll(IMPORT)) {
      const target = new URL(specifier!, new URL(path, root)).href.slice(root.href.length);
      found.push({ from: path, to: target });
    }
  }
  return found;
}

/** A section of docs/development.md, from its `## ` heading to the next. */
function section(heading: string): string {
  const start = development.indexOf(`\n## ${heading}\n`);
  assert.ok(start >= 0, `docs/development.md has no section "${heading}"`);
  const end = development.indexOf("\n## ", start + 1);
  return development.slice(start, end < 0 ? undefined : end);
}

const files = await repositoryFiles();
const edges = await importsOf(files.filter((path) => /\.(ts|js)$/.test(path)));
const development = await Deno.readTextFile(new URL("docs/development.md", root));

Deno.test("the scan reads the tree's imports", () => {
  assert.ok(files.includes("docs/development.md") && files.includes("deno.json"));
  assert.ok(edges.length > 500, `only ${edges.length} imports found`);
  assert.ok(edges.some((e) => e.from === "scripts/start.ts" && e.to === "local/stack.ts"));
});
const isTest = (path: string) => path.startsWith("tests/") || path.endsWith("_test.ts");
const crossings = (from: (path: string) => boolean, to: (path: string) => boolean) =>
  edges.filter((edge) => from(edge.from) && to(edge.to)).map((e) => `${e.from} -> ${e.to}`);

Deno.test("only tests import the test helpers", () => {
  assert.deepEqual(crossings((p) => !isTest(p), (p) => p.startsWith("tests/")), []);
});

Deno.test("the deployed functions reach nothing of the local stack, benchmarks or tasks", () => {
  assert.deepEqual(
    crossings(
      (p) => p.startsWith("supabase/functions/") && !isTest(p),
      (p) => /^(local|bench|scripts|tests)\//.test(p),
    ),
    [],
  );
});

Deno.test("the local stack and the VM agent reach no benchmark and no task", () => {
  assert.deepEqual(
    crossings((p) => /^(local|agent)\//.test(p), (p) => /^(bench|scripts)\//.test(p)),
    [],
  );
});

Deno.test("scripts/ holds short task entry points and the generators", async () => {
  for (const path of files.filter((p) => p.startsWith("scripts/"))) {
    if (path.split("/").length > 2) {
      assert.ok(path.startsWith("scripts/generators/"), `${path} belongs elsewhere`);
      continue;
    }
    const lines = (await Deno.readTextFile(new URL(path, root))).split("\n");
    assert.ok(lines.length <= 100, `${path} has ${lines.length} lines`);
  }
});

Deno.test("the root holds only what docs/development.md's layout names", () => {
  const layout = section("Where things go");
  const folders = [...layout.matchAll(/^\| `([^`/]+\/)` +\|/gm)].map(([, folder]) => folder!);
  const paragraph = layout.match(/\nAt the root, beside these folders, only (.+?)\n\n/s)?.[1];
  assert.ok(folders.length >= 8 && paragraph, "the layout's table or its root files were not read");
  const named = new Set([...folders, ...[...paragraph.matchAll(/`([^`]+)`/g)].map(([, f]) => f!)]);
  const atRoot = new Set(files.map((path) => path.replace(/\/.*/s, "/")));
  assert.deepEqual([...atRoot].filter((entry) => !named.has(entry)).sort(), []);
});

Deno.test("tests/ holds only the folders the Tests table names", () => {
  const named = new Set(
    [...section("Tests").matchAll(/`(tests\/[^/`]+\/)/g)].map(([, folder]) => folder!),
  );
  assert.ok(
    named.has("tests/unit/") && named.has("tests/helpers/"),
    "the Tests table was not read",
  );
  const strays = files.filter((p) => p.startsWith("tests/"))
    .filter((path) => !named.has(path.replace(/^(tests\/[^/]+\/).*$/s, "$1")));
  assert.deepEqual(strays, []);
});

Deno.test("no two test files share a name, unless each sits beside the file it tests", () => {
  const all = new Set(files);
  const byName = new Map<string, string[]>();
  for (const path of files.filter((p) => /_test\.(ts|js)$/.test(p))) {
    // A test beside its subject (routes/x_test.ts next to routes/x.ts) is named by its folder.
    if (all.has(path.replace(/_test\.(ts|js)$/, ".$1"))) continue;
    const name = path.slice(path.lastIndexOf("/") + 1);
    byName.set(name, [...byName.get(name) ?? [], path]);
  }
  assert.deepEqual([...byName.values()].filter((paths) => paths.length > 1), []);
});

Deno.test("no files import each other in a circle", () => {
  const graph = new Map<string, string[]>();
  for (const { from, to } of edges) graph.set(from, [...graph.get(from) ?? [], to]);
  assert.deepEqual(circles(graph), []);
});

/** The import circles of `graph` (its strongly connected parts of more than one file, or a
 * file importing itself), each sorted: Tarjan's algorithm. */
function circles(graph: Map<string, string[]>): string[][] {
  const order = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (file: string) => {
    order.set(file, order.size);
    low.set(file, order.get(file)!);
    stack.push(file);
    onStack.add(file);
    for (const next of graph.get(file) ?? []) {
      if (!order.has(next)) {
        visit(next);
        low.set(file, Math.min(low.get(file)!, low.get(next)!));
      } else if (onStack.has(next)) low.set(file, Math.min(low.get(file)!, order.get(next)!));
    }
    if (low.get(file) !== order.get(file)) return;
    const part: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      part.push(member);
    } while (member !== file);
    if (part.length > 1 || graph.get(file)?.includes(file)) found.push(part.sort());
  };
  for (const file of graph.keys()) if (!order.has(file)) visit(file);
  return found;
}
