/**
 * docs/configuration.md is what the declarations in config.ts render (regenerate with
 * `deno task docs`), and it names every variable the functions read, the Azure driver's included.
 */
import assert from "node:assert/strict";
import {
  documentedVariables,
  renderConfigurationDoc,
} from "../../scripts/generators/configuration_doc.ts";
import { parseAzureConfig } from "../../supabase/functions/_shared/compute/azure_config.ts";
import { ENV, ENV_READ_ELSEWHERE, EnvSchema } from "../../supabase/functions/_shared/config.ts";

const DOC = new URL("../../docs/configuration.md", import.meta.url);
const committed = await Deno.readTextFile(DOC);
const rows = (doc: string) => doc.split("\n").filter((line) => line.startsWith("| `"));

Deno.test("docs/configuration.md is what config.ts declares (run deno task docs)", () => {
  assert.equal(
    committed,
    renderConfigurationDoc(),
    "docs/configuration.md is out of date: run deno task docs",
  );
});

Deno.test("every key of the env schema has a row in docs/configuration.md", () => {
  const table = rows(committed);
  for (const name of Object.keys(EnvSchema.shape)) {
    assert.ok(table.some((row) => row.includes(`\`${name}\``)), `${name} is not documented`);
  }
  assert.deepEqual(documentedVariables().filter((name) => !committed.includes(`\`${name}\``)), []);
});

Deno.test("every variable parseAzureConfig reads is documented, its required ones as required", async () => {
  // azure_config.ts does not export its schema: its keys are read from the source.
  const source = await Deno.readTextFile(
    new URL("../../supabase/functions/_shared/compute/azure_config.ts", import.meta.url),
  );
  const schema = source.slice(source.indexOf("const AzureEnv = z.object({"));
  const keys = [...schema.slice(0, schema.indexOf("\n});")).matchAll(/^ {2}([A-Z][A-Z0-9_]+):/gm)]
    .map((m) => m[1]!);
  assert.ok(keys.includes("AZURE_TENANT_ID") && keys.includes("REPORTER_PUBLIC_URL"));
  const documented = new Set(documentedVariables());
  assert.deepEqual(keys.filter((key) => !documented.has(key)), []);

  let message = "";
  try {
    parseAzureConfig({});
  } catch (error) {
    message = (error as Error).message;
  }
  const required = [...message.matchAll(/([A-Z][A-Z0-9_]+): is required/g)].map((m) => m[1]!);
  const documentedRequired = Object.entries(ENV_READ_ELSEWHERE)
    .filter(([, setting]) => setting.whenUnset.startsWith("required"))
    .map(([name]) => name);
  assert.deepEqual(documentedRequired.sort(), required.sort());
});

Deno.test("each variable is declared once and described in one sentence", () => {
  const names = documentedVariables();
  assert.equal(new Set(names).size, names.length, "a variable is declared twice");
  const docs = [...Object.values(ENV), ...Object.values(ENV_READ_ELSEWHERE)]
    .flatMap((setting) => "doc" in setting ? [setting.doc] : []);
  for (const doc of docs) {
    assert.match(doc, /^[^\n]+\.$/, `one line ending with a full stop: ${doc}`);
    assert.doesNotMatch(doc.replaceAll("e.g.", "eg"), /\. [A-Z]/, `one sentence: ${doc}`);
    assert.ok(doc.length <= 200, `at most 200 characters: ${doc}`);
  }
});

Deno.test("a default is shown from the schema, an alias in its variable's row", () => {
  const row = (name: string) => rows(committed).find((line) => line.startsWith(`| \`${name}\``));
  assert.match(row("MAX_BODY_BYTES")!, /\| `1048576` +\|/);
  assert.match(row("LOCAL_COMPUTE_FAULTS")!, /\| empty +\|/);
  assert.match(row("AUTH_JWT_SECRET")!, /\(alias `SUPABASE_JWT_SECRET`\)/);
  assert.equal(row("SUPABASE_JWT_SECRET"), undefined);
});

Deno.test("an alias must name a documented variable", () => {
  assert.throws(
    () =>
      renderConfigurationDoc({ X: { group: "Auth", schema: EnvSchema.shape.PORT, aliasOf: "Y" } }),
    /X: aliasOf names no documented variable/,
  );
});
