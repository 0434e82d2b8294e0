/**
 * Untrusted text in a session's prompt (contract §18): the platform fences what was written on
 * GitHub (private.untrusted_block, supabase/schemas/26_untrusted_text.sql) as
 *
 *   <<<untrusted <nonce> source="…" author="…" permission="…">>>
 *   …
 *   <<<end untrusted <nonce>>>>
 *
 * and a block ends only at the closing line with its own nonce (a block never closed runs to the
 * end). The runner reads these blocks so that an `@agent` line written by someone else is never
 * handed on as a task: not from inside a block of the lead's answer, and not when the lead's
 * handoff is a line copied from a block of the task it answered. docs/vm-agent.md ("Untrusted
 * text") shows the format.
 */

const OPENING = /^<<<untrusted ([0-9a-f]{8,64})(?:\s[^\n]*)?>>>$/;

/** A line as the fences read it: without indentation and blockquote markers. */
function bare(line: string): string {
  return line.replace(/^[\s>]*/, "").trimEnd();
}

/**
 * Each line of `text`, and whether it is inside an untrusted block (its opening and closing lines
 * included; a block may be quoted with `>` or indented, as an answer quotes it).
 */
export function fencedLines(text: string): { line: string; fenced: boolean }[] {
  const out: { line: string; fenced: boolean }[] = [];
  let closing: string | undefined;
  for (const line of text.replace(/\r\n?/g, "\n").split("\n")) {
    const seen = bare(line);
    if (closing) {
      out.push({ line, fenced: true });
      if (seen === closing) closing = undefined;
      continue;
    }
    const nonce = OPENING.exec(seen)?.[1];
    if (nonce) closing = `<<<end untrusted ${nonce}>>>`;
    out.push({ line, fenced: closing !== undefined });
  }
  return out;
}

/** The lines of `text` written by someone else: inside its untrusted blocks, fence lines left out. */
export function untrustedLines(text: string): string[] {
  return fencedLines(text).filter((l) => l.fenced && !/^<<<(?:end )?untrusted /.test(bare(l.line)))
    .map((l) => l.line);
}

/** `text` without its untrusted blocks: what the person who gave the task wrote. */
export function trustedText(text: string): string {
  return fencedLines(text).filter((l) => !l.fenced).map((l) => l.line).join("\n");
}

/**
 * A line compared as a handoff's text: without list or quote markers, `@name` mentions, case,
 * spacing and closing punctuation, so a copy is found however it was reflowed.
 */
function comparable(line: string): string {
  return line
    .replace(/^[\s>*+-]*(?:\d+[.)]\s+)?/, "")
    .replace(/(?<![\w@])@[a-z][a-z0-9_-]{0,31}\b[:,]?/g, " ")
    .replace(/\s+/g, " ")
    .trim()
    .replace(/[.!?;:]+$/, "")
    .toLowerCase();
}

/** Whether a handoff's text is a line of an untrusted block of `task` (the text it answered). */
export function copiedFromUntrusted(handoff: string, task: string): boolean {
  const wanted = comparable(handoff);
  return wanted !== "" && untrustedLines(task).some((line) => comparable(line) === wanted);
}
