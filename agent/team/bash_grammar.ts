/**
 * The WASM files of the shell parser the approval rules read commands with (tree-sitter's runtime
 * and its bash grammar, both from npm, see approval_rules.ts for why this parser). The runner runs
 * from source with the project's configuration and reads them from its module cache; the approval
 * hook, bundled for the sessions' users (hook_bundle.ts), cannot, so the runner writes them where
 * the hook reads them (shell_parser.ts). Imported as bytes (Deno's `raw-imports`, deno.json), they
 * stay out of the hook's bundle, which would otherwise carry them base64-encoded and start slower.
 */
import bash from "tree-sitter-bash/tree-sitter-bash.wasm" with { type: "bytes" };
import runtime from "web-tree-sitter/web-tree-sitter.wasm" with { type: "bytes" };
import { type BashGrammar, GRAMMAR_FILES } from "./shell_parser.ts";

export const BASH_GRAMMAR: BashGrammar = { runtime, bash };

/** The grammar's files in `dir`, readable by every user (the session's included). */
export async function writeBashGrammar(dir: string): Promise<void> {
  await Deno.mkdir(dir, { recursive: true, mode: 0o755 });
  for (const part of ["runtime", "bash"] as const) {
    const file = `${dir}/${GRAMMAR_FILES[part]}`;
    await Deno.writeFile(file, BASH_GRAMMAR[part], { mode: 0o644 });
    await Deno.chmod(file, 0o644);
  }
}
