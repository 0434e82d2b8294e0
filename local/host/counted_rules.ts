/**
 * Rules a stand-in applies to the next N matching requests (its scripted faults and delays, the
 * ARM and GitHub stand-ins alike): each rule counts what it answered and what it still will, and
 * a test can cancel it.
 */
export interface FaultHandle {
  /** Requests answered by this rule so far. */
  readonly hits: number;
  /** Requests this rule will still answer. */
  readonly remaining: number;
  cancel(): void;
}

export class CountedRules<R extends { times?: number }> {
  readonly #rules: { rule: R; remaining: number; hits: number }[] = [];

  /** A rule for its next `times` matches (default 1; `Infinity` allowed). */
  add(rule: R): FaultHandle {
    const state = { rule: { ...rule }, remaining: rule.times ?? 1, hits: 0 };
    this.#rules.push(state);
    return {
      get hits() {
        return state.hits;
      },
      get remaining() {
        return state.remaining;
      },
      cancel() {
        state.remaining = 0;
      },
    };
  }

  /** The first rule with matches left that `matches`, counted as a hit; undefined if none. */
  take(matches: (rule: R) => boolean): R | undefined {
    const found = this.#rules.find((s) => s.remaining > 0 && matches(s.rule));
    if (!found) return undefined;
    found.remaining--;
    found.hits++;
    return found.rule;
  }

  clear(): void {
    this.#rules.length = 0;
  }
}
