/**
 * `deno task docs`: writes every generated document (scripts/generators/generated_docs.ts), e.g.
 * docs/configuration.md from the settings declared in supabase/functions/_shared/config.ts.
 * `deno task docs --check` writes nothing and fails when one is out of date.
 */
import { docFile, GENERATED_DOCS } from "./generators/generated_docs.ts";

const check = Deno.args.includes("--check");
let stale = 0;
for (const doc of GENERATED_DOCS) {
  const file = docFile(doc);
  const text = doc.render();
  const current = await Deno.readTextFile(file).catch(() => undefined);
  if (current === text) {
    console.log(`${doc.path}: up to date`);
  } else if (check) {
    console.error(`${doc.path}: out of date (run deno task docs)`);
    stale++;
  } else {
    await Deno.mkdir(new URL(".", file), { recursive: true });
    await Deno.writeTextFile(file, text);
    console.log(`${doc.path}: written`);
  }
}
if (stale > 0) Deno.exit(1);
