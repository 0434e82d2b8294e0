/**
 * The approval hook for sessions that run as their agents' own users (session_users.ts): one file
 * every such user can read (`deno bundle`), with the WASM of its shell parser beside it
 * (bash_grammar.ts), so it needs nothing of root's module cache.
 */
import { writeBashGrammar } from "./bash_grammar.ts";

const HOOK = new URL("./approval_hook.ts", import.meta.url).pathname;
const DENO_CONFIG = new URL("../../deno.json", import.meta.url).pathname;

/** The hook bundled into `dir` (every user may pass through it), its path. */
export async function bundleApprovalHook(dir: string): Promise<string> {
  await Deno.mkdir(dir, { recursive: true, mode: 0o755 });
  await Deno.chmod(dir, 0o755);
  const hook = `${dir}/approval_hook.js`;
  const bundled = await new Deno.Command(Deno.execPath(), {
    args: ["bundle", "--quiet", "--config", DENO_CONFIG, "-o", hook, HOOK],
    stdout: "null",
    stderr: "piped",
  }).output();
  if (!bundled.success) {
    throw new Error(
      `The approval hook could not be bundled: ${new TextDecoder().decode(bundled.stderr)}`,
    );
  }
  await Deno.chmod(hook, 0o644);
  await writeBashGrammar(dir);
  return hook;
}
