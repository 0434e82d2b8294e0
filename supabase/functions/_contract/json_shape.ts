/**
 * Measures parsed JSON without recursion, so a body nested thousands of levels deep is refused with
 * a 400 instead of overflowing the stack of whatever walks it next (zod, JSON.stringify, the text
 * checks, PostgreSQL's jsonb input).
 */

/** How deep request bodies may nest, counted from the body itself (1 = a flat object). */
export const MAX_BODY_DEPTH = 64;

/**
 * The nesting depth of `value` (a scalar is 0, `{}` and `[]` are 1), or `Infinity` as soon as it
 * exceeds `limit`: the walk stops there, so measuring a hostile value costs at most its size.
 */
export function jsonDepth(value: unknown, limit = MAX_BODY_DEPTH): number {
  let deepest = 0;
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (typeof node !== "object" || node === null) continue;
    const level = depth + 1;
    if (level > limit) return Infinity;
    if (level > deepest) deepest = level;
    for (const child of Object.values(node)) {
      if (typeof child === "object" && child !== null) stack.push([child, level]);
    }
  }
  return deepest;
}

/**
 * The path (`a.b.0.c`) of the first string, value or key, that PostgreSQL cannot store as text or
 * jsonb: one with a NUL character or a lone UTF-16 surrogate. `""` is the value itself.
 */
export function findUnstorableText(value: unknown): string | undefined {
  const bad = (text: string) => text.includes("\u0000") || !text.isWellFormed();
  const stack: [unknown, string][] = [[value, ""]];
  while (stack.length > 0) {
    const [node, path] = stack.pop()!;
    if (typeof node === "string") {
      if (bad(node)) return path;
      continue;
    }
    if (typeof node !== "object" || node === null) continue;
    // Pushed in reverse so the first offending field in document order is the one named.
    for (const [key, child] of Object.entries(node).reverse()) {
      const at = path ? `${path}.${key}` : key;
      if (bad(key)) return at;
      stack.push([child, at]);
    }
  }
  return undefined;
}
