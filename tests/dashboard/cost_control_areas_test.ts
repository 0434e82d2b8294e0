/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
/// <reference lib="deno.ns" />
/**
 * The dashboard's cost control (contract §12) as functions from rows to DOM, rendered without a
 * browser (linkedom): Costs' month against the budget, model and compute apart, and Settings'
 * reading of the settings with the next instants in the schedule's zone.
 */
import assert from "node:assert/strict";
import { parseHTML } from "linkedom";

const dom = parseHTML("<!doctype html><html><body></body></html>");
Object.assign(globalThis, { document: dom.document, Node: dom.Node });

const { monthView } = await import("../../dashboard/src/areas/costs.ts");
const { costControlView } = await import("../../dashboard/src/areas/settings.ts");

const P = "11111111-1111-4111-8111-111111111111";
const root = (children: unknown[]) => {
  const div = document.createElement("div");
  div.append(...(children as Node[]));
  return div;
};

Deno.test("Costs: the month's bar against the budget, model and compute apart", () => {
  const view = root(monthView({
    project_id: P,
    month: "2026-11-01",
    model_usd: 3.5,
    compute_usd: 1.24,
    compute_hours: 10,
    vm_usd_per_hour: 0.124,
    total_usd: 4.74,
    monthly_budget_usd: 5,
    budget_alert_percent: 80,
  }));
  assert.equal(
    view.querySelector("figcaption")?.textContent,
    "2026-11 (UTC): $4.74 of $5.00 (95% of the budget)",
  );
  assert.match(
    view.querySelector("svg.spend-bar")?.getAttribute("aria-label") ?? "",
    /model \$3\.50, compute \$1\.24$/,
  );
  const widths = ["rect.spend-model", "rect.spend-compute"].map((s) =>
    Number(view.querySelector(s)?.getAttribute("width"))
  );
  assert.deepEqual(widths.map(Math.round), [364, 129], "on a track as long as the budget (520)");
  assert.match(view.textContent ?? "", /\$0\.26 left this month/);
});

Deno.test("Costs: no price and no budget are said plainly", () => {
  const view = root(monthView({
    project_id: P,
    month: "2026-11-01",
    model_usd: 0.2,
    compute_usd: 0,
    compute_hours: 0.5,
    vm_usd_per_hour: null,
    total_usd: 0.2,
    monthly_budget_usd: null,
    budget_alert_percent: 80,
  }));
  assert.match(view.querySelector("figcaption")?.textContent ?? "", /no monthly budget/);
  assert.match(view.textContent ?? "", /30 min not stopped × no known price/);
});

Deno.test("Settings: the schedule's next instants in its zone, the reason of the last stop", () => {
  const view = root(costControlView({
    idle_stop_minutes: 45,
    schedule: { timezone: "Australia/Sydney", start: "0 9 * * 1-5", stop: "0 17 * * 1-5" },
    next_scheduled_start_at: "2026-04-05T23:00:00.000Z",
    next_scheduled_stop_at: "2026-04-06T07:00:00.000Z",
    monthly_budget_usd: 25,
    budget_alert_percent: 75,
    last_stop_reason: "budget",
  }));
  const text = view.textContent ?? "";
  assert.match(text, /After 45 idle minutes/);
  assert.match(
    view.querySelector(".next-start")?.textContent ?? "",
    /^Mon 6 Apr, 09:00 .*Australia\/Sydney/,
  );
  assert.match(view.querySelector(".next-stop")?.textContent ?? "", /17:00/);
  assert.match(text, /\$25\.00, alert at 75%/);
  assert.match(text, /the monthly budget/);
});
