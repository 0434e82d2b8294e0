/**
 * The contract (supabase/functions/_contract/) is all the outside world shares with the server:
 * it depends on nothing but zod, and what runs elsewhere (the VM agent, the dashboard, the OpenAPI
 * generator) reaches no server module through it, so the VM image ships the contract, not the
 * server's SQL.
 */
import assert from "node:assert/strict";

const root = new URL("../../", import.meta.url);

/** The repository files (relative paths) and npm packages in an entry's module graph. */
async function graphOf(entry: string): Promise<{ files: string[]; packages: string[] }> {
  const { stdout, success, stderr } = await new Deno.Command("deno", {
    args: ["info", "--json", new URL(entry, root).pathname],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.ok(success, new TextDecoder().decode(stderr));
  const graph = JSON.parse(new TextDecoder().decode(stdout)) as {
    modules: { specifier: string; npmPackage?: string }[];
  };
  return {
    files: graph.modules.filter((m) => m.specifier.startsWith(root.href))
      .map((m) => m.specifier.slice(root.href.length)).sort(),
    packages: [...new Set(graph.modules.flatMap((m) => m.npmPackage ?? []))]
      .map((p) => p.replace(/@[^@]+$/, "")).sort(),
  };
}

function assertOnlyUnder(files: string[], allowed: string[], what: string) {
  const outside = files.filter((file) => !allowed.some((prefix) => file.startsWith(prefix)));
  assert.deepEqual(outside, [], `${what} reaches modules outside ${allowed.join(", ")}`);
}

Deno.test("the contract imports nothing but itself and zod, and uses no Deno API", async () => {
  const contract = "supabase/functions/_contract/";
  for await (const entry of Deno.readDir(new URL(contract, root))) {
    const { files, packages } = await graphOf(`${contract}${entry.name}`);
    assertOnlyUnder(files, [contract], entry.name);
    assert.deepEqual(packages.filter((p) => p !== "zod"), [], entry.name);
    const text = await Deno.readTextFile(new URL(`${contract}${entry.name}`, root));
    assert.doesNotMatch(text, /\bDeno\./, `${entry.name} uses a Deno API`);
  }
});

Deno.test("the VM agent reaches only its own modules and the contract", async () => {
  const { files } = await graphOf("scripts/agent.ts");
  assertOnlyUnder(files, ["scripts/agent.ts", "agent/", "supabase/functions/_contract/"], "agent");
  assert.ok(files.includes("supabase/functions/_contract/reporter.ts"));
});

Deno.test("the dashboard reaches only its own modules, the typed client and the contract", async () => {
  const { files } = await graphOf("dashboard/src/main.ts");
  assertOnlyUnder(files, [
    "dashboard/",
    "supabase/client/",
    "supabase/types/",
    "supabase/functions/_contract/",
  ], "dashboard");
});

Deno.test("the OpenAPI generator reads only the contract", async () => {
  const { files } = await graphOf("scripts/openapi.ts");
  assertOnlyUnder(files, [
    "scripts/openapi.ts",
    "scripts/generators/openapi/",
    "supabase/functions/_contract/",
  ], "openapi");
});
