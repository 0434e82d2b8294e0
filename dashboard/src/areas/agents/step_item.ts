/**
 * One step of a session (contract §17) as a list item: what kind of step (an icon and a word, the
 * word carries the meaning), the tool, the one-line summary, and the detail behind a disclosure
 * (`<details>`), "(cut)" when the VM cut it to 4 KiB.
 */
import type { SessionStep } from "../../data.ts";
import { h } from "../../ui.ts";

export const STEP_KINDS: Record<string, { icon: string; label: string }> = {
  text: { icon: "💬", label: "Text" },
  tool_use: { icon: "🔧", label: "Tool call" },
  tool_result: { icon: "📄", label: "Tool result" },
  approval: { icon: "✋", label: "Approval" },
  result: { icon: "🏁", label: "Result" },
  // The repository's .agents/setup.sh and the system packages (contract §20).
  setup: { icon: "🧰", label: "Setup" },
};

export function stepItem(step: SessionStep): HTMLLIElement {
  const kind = STEP_KINDS[step.kind ?? ""] ?? { icon: "•", label: step.kind ?? "Step" };
  const at = step.at ? new Date(step.at) : undefined;
  const head = [
    h(
      "span",
      { class: `step-kind step-${step.kind ?? ""}` },
      h("span", { "aria-hidden": "true" }, kind.icon),
      ` ${kind.label}`,
    ),
    step.tool ? h("code", { class: "step-tool" }, step.tool) : null,
  ];
  const summary = h("span", { class: "step-summary" }, step.summary ?? "");
  return h(
    "li",
    { class: "step", "data-seq": step.seq ?? 0 },
    at ? h("time", { datetime: at.toISOString(), title: at.toLocaleString() }, time(at)) : null,
    " ",
    ...head.flatMap((part) => part ? [part, " "] : []),
    step.detail === null || step.detail === undefined || step.detail === ""
      ? h("span", {}, summary, step.truncated ? " (cut)" : null)
      : h(
        "details",
        {},
        h("summary", {}, summary),
        h("pre", {}, step.detail),
        step.truncated ? h("p", { class: "hint" }, "(cut)") : null,
      ),
  );
}

let clock: Intl.DateTimeFormat | undefined;

/** HH:MM:SS in the reader's zone (steps come seconds apart), one formatter for every step. */
function time(at: Date): string {
  clock ??= new Intl.DateTimeFormat(undefined, {
    hour: "2-digit",
    minute: "2-digit",
    second: "2-digit",
  });
  return clock.format(at);
}
