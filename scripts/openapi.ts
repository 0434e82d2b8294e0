/**
 * `deno task openapi`: writes the OpenAPI 3.1 document of vm-api and vm-reporter, generated from
 * their zod schemas, to docs/openapi.json (committed; a test fails when it is out of date).
 */
import { openApiDocument } from "./generators/openapi/document.ts";

export const OPENAPI_FILE = new URL("../docs/openapi.json", import.meta.url);

/** The file's exact text: what the test compares the committed file with. */
export function openApiText(): string {
  return JSON.stringify(openApiDocument(), null, 2) + "\n";
}

if (import.meta.main) {
  await Deno.mkdir(new URL(".", OPENAPI_FILE), { recursive: true });
  await Deno.writeTextFile(OPENAPI_FILE, openApiText());
  console.log(`wrote ${OPENAPI_FILE.pathname}`);
}
