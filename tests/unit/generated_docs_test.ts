/**
 * The documents rendered from code (scripts/generators/generated_docs.ts) are committed as their
 * generators render them; docs/errors.md has one heading per error code of the contract.
 */
import assert from "node:assert/strict";
import { docFile, GENERATED_DOCS } from "../../scripts/generators/generated_docs.ts";
import { ERROR_CODES } from "../../supabase/functions/_contract/errors.ts";

Deno.test("every generated doc is up to date (run deno task docs)", async () => {
  for (const doc of GENERATED_DOCS) {
    const text = await Deno.readTextFile(docFile(doc)).catch(() => "(missing)");
    assert.equal(text, doc.render(), `${doc.path} is out of date: run deno task docs`);
  }
});

Deno.test("docs/errors.md has one heading per error code, with its status", async () => {
  const text = await Deno.readTextFile(new URL("../../docs/errors.md", import.meta.url));
  const headings = [...text.matchAll(/^## (\w+)\n\n\*\*(\d{3})\*\*/gm)]
    .map((m) => [m[1], Number(m[2])]);
  assert.deepEqual(
    headings,
    Object.entries(ERROR_CODES).map(([code, info]) => [code, info.status]),
  );
});
