/**
 * The folders say what they hold (docs/development.md, "Where things go"), and the arrows between
 * them go one way: what is deployed reaches nothing local, the local stack reaches no benchmark
 * or task, and only tests reach test helpers. Read from the import statements of every module.
 */
import assert from "node:assert/strict";

const root = new URL("../../", import.meta.url);
const IMPORT = /(?:from\s+|import\s*\(\s*|import\s+)["'](\.\.?\/[^"']+)["']/g;
const SKIP = new Set([".git", ".local", "node_modules", "dist", "test-results"]);

/** Every import of a relative module in the tree, as repository-relative paths. */
async function imports(): Promise<{ from: string; to: string }[]> {
  const found: { from: string; to: string }[] = [];
  async function walk(dir: URL, prefix: string): Promise<void> {
    for await (const entry of Deno.readDir(dir)) {
      if (SKIP.has(entry.name)) continue;
      const path = `${prefix}${entry.name}`;
      if (entry.isDirectory) await walk(new URL(`${entry.name}/`, dir), `${path}/`);
      else if (/\.(ts|js)$/.test(entry.name)) {
        const text = await Deno.readTextFile(new URL(entry.name, dir));
        for (const [, specifier] of text.matchAll(IMPORT)) {
          const target = new URL(specifier!, new URL(path, root)).href.slice(root.href.length);
          found.push({ from: path, to: target });
        }
      }
    }
  }
  await walk(root, "");
  return found;
}

const edges = await imports();
Deno.test("the scan reads the tree's imports", () => {
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
  for await (const entry of Deno.readDir(new URL("scripts/", root))) {
    if (entry.isDirectory) {
      assert.equal(entry.name, "generators", `scripts/${entry.name}/ belongs elsewhere`);
      continue;
    }
    const lines = (await Deno.readTextFile(new URL(`scripts/${entry.name}`, root))).split("\n");
    assert.ok(lines.length <= 100, `scripts/${entry.name} has ${lines.length} lines`);
  }
});
