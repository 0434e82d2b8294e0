/**
 * What a session may spend (contract §11a): a project with a monthly budget gives each session
 * `--max-budget-usd` of what is left of it this UTC month, so the team cannot overshoot the budget
 * by more than one model request. The manifest says what was spent when it was fetched; what this
 * VM's own sessions spent since then is counted here, so the figure stays current between
 * fetches. A new month starts from the whole budget.
 */
import type { Manifest } from "./types.ts";

export class SessionBudget {
  #manifest: Manifest | undefined;
  #spentSince = 0;

  /** Dollars left for the next session, or undefined when the project has no budget. */
  left(manifest: Manifest | undefined, now = new Date()): number | undefined {
    const budget = manifest?.budget;
    if (!budget) return undefined;
    if (manifest !== this.#manifest) {
      this.#manifest = manifest;
      this.#spentSince = 0;
    }
    if (now.toISOString().slice(0, 7) !== budget.month) return budget.monthly_usd;
    const left = budget.monthly_usd - budget.spent_usd - this.#spentSince;
    return Math.max(0, Math.floor(left * 100) / 100);
  }

  /** A session of this VM spent `usd` (the CLI's total_cost_usd) under `manifest`. */
  spent(manifest: Manifest | undefined, usd: number): void {
    if (manifest !== this.#manifest) return; // a newer manifest already counts it
    this.#spentSince += usd;
  }
}
