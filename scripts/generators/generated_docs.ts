/**
 * The documents generated from code, committed, and rewritten by `deno task docs`. A test fails
 * when one differs from what its generator renders. A new one is one entry here.
 */
import { renderConfigurationDoc } from "./configuration_doc.ts";
import { renderErrorsDoc } from "./errors_doc.ts";

export interface GeneratedDoc {
  /** Relative to the repository root. */
  readonly path: string;
  /** The file's exact text. */
  readonly render: () => string;
}

export const GENERATED_DOCS: readonly GeneratedDoc[] = [
  { path: "docs/configuration.md", render: () => renderConfigurationDoc() },
  { path: "docs/errors.md", render: () => renderErrorsDoc() },
];

/** The doc's file in this checkout. */
export function docFile(doc: GeneratedDoc): URL {
  return new URL(`../../${doc.path}`, import.meta.url);
}
