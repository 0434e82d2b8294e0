/**
 * Bash's grammar as tree-sitter reads it (web-tree-sitter and tree-sitter-bash, both WASM): the
 * parser the approval rules read commands with. It loads from the grammar's bytes, which the hook
 * reads from files beside it (bash_grammar.ts writes them) and the runner from its module cache.
 */
import { Language, type Node, Parser } from "web-tree-sitter";

export type { Node };

/** The two WASM modules: tree-sitter's runtime and the bash grammar. */
export interface BashGrammar {
  runtime: Uint8Array;
  bash: Uint8Array;
}

/** Their file names, as npm ships them. */
export const GRAMMAR_FILES = {
  runtime: "web-tree-sitter.wasm",
  bash: "tree-sitter-bash.wasm",
} as const;

export interface BashParser {
  /** The syntax tree of `source`, handed to `read`; its memory is freed afterwards. */
  parse<T>(source: string, read: (root: Node) => T): T;
}

/** tree-sitter's runtime is one per process: it is started once. */
let runtimeReady: Promise<void> | undefined;

export async function loadBashParser(grammar: BashGrammar): Promise<BashParser> {
  runtimeReady ??= Parser.init({ wasmBinary: grammar.runtime });
  await runtimeReady;
  const parser = new Parser();
  parser.setLanguage(await Language.load(grammar.bash));
  return {
    parse(source, read) {
      const tree = parser.parse(source);
      if (!tree) throw new Error("the shell parser returned no tree");
      try {
        return read(tree.rootNode);
      } finally {
        tree.delete();
      }
    },
  };
}

/** The grammar's files from `dir` (where bash_grammar.ts wrote them). */
export async function readBashGrammar(dir: string | URL): Promise<BashGrammar> {
  const base = dir instanceof URL ? dir : new URL(`file://${dir.replace(/\/?$/, "/")}`);
  const [runtime, bash] = await Promise.all([
    Deno.readFile(new URL(GRAMMAR_FILES.runtime, base)),
    Deno.readFile(new URL(GRAMMAR_FILES.bash, base)),
  ]);
  return { runtime, bash };
}
