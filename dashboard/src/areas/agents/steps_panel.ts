/**
 * A session's steps (contract §17), paged so that a session of thousands of steps stays quick: the
 * latest page first, "Show earlier steps" for the page before, and new steps appended to the list
 * as they come (only those after the last seq shown are read; the items already shown are left as
 * they are). Reads go one at a time, in the order they were asked for.
 */
import type { SessionStep, StepRange } from "../../data.ts";
import { h } from "../../ui.ts";
import { stepItem } from "./step_item.ts";

/** How many steps a page holds. */
export const STEP_PAGE = 200;

export interface StepsPanelOptions {
  /** What the heading names: "lead's current session". */
  title: string;
  /** Reads a range of the session's steps, in seq order (sessionSteps, or rows in a test). */
  load(range: StepRange): Promise<SessionStep[]>;
  /** Whether the session is running: new steps are expected (it says so when there are none). */
  live: boolean;
  close(): void;
  fail(error: unknown): void;
  pageSize?: number;
}

export interface StepsPanel {
  element: HTMLElement;
  live: boolean;
  /** Reads the steps after the last one shown (the latest page at first) and appends them. */
  newer(): Promise<void>;
  /** Reads the page before the earliest step shown and puts it on top. */
  earlier(): Promise<void>;
  /** Takes the reader to the panel (its heading) once it is open. */
  focus(): void;
}

export function stepsPanel(options: StepsPanelOptions): StepsPanel {
  const limit = options.pageSize ?? STEP_PAGE;
  let first: number | undefined;
  let last: number | undefined;
  let queue = Promise.resolve();
  const serial = (work: () => Promise<void>) =>
    queue = queue.then(work).catch((error) => options.fail(error));

  const heading = h("h3", { id: "steps-heading", tabindex: -1 }, `Steps of ${options.title}`);
  const list = h("ol", { class: "steps" });
  const shown = h("p", { class: "hint", role: "status" }, "Reading the steps…");
  const earlierButton = h("button", {
    type: "button",
    class: "secondary",
    hidden: true,
    onclick: () => void panel.earlier(),
  }, "Show earlier steps");
  const element = h(
    "section",
    { class: "steps-panel", "aria-labelledby": "steps-heading" },
    h(
      "div",
      { class: "row" },
      heading,
      h("button", { type: "button", class: "secondary", onclick: () => options.close() }, "Close"),
    ),
    shown,
    earlierButton,
    list,
  );

  /** Adds rows at one end, skipping any already shown (a read may overlap the last one). */
  function add(rows: SessionStep[], at: "start" | "end"): void {
    const fresh = rows.filter((row) => {
      const seq = row.seq ?? -1;
      return at === "end" ? last === undefined || seq > last : first === undefined || seq < first;
    });
    if (fresh.length > 0) {
      const items = document.createDocumentFragment();
      for (const row of fresh) items.appendChild(stepItem(row));
      if (at === "end") list.appendChild(items);
      else list.insertBefore(items, list.firstChild);
      first = Math.min(first ?? Infinity, fresh[0]!.seq ?? 0);
      last = Math.max(last ?? -Infinity, fresh.at(-1)!.seq ?? 0);
    }
    const count = list.children.length;
    shown.textContent = count === 0
      ? options.live
        ? "No step yet: they appear here as the agent takes them."
        : "No step of this session is kept (steps are kept for 14 days by default)."
      : `${count.toLocaleString("en")} ${count === 1 ? "step" : "steps"} shown, oldest first` +
        (options.live ? "; new steps appear at the end as the agent takes them." : ".");
  }

  /** Whether a page read backwards may have steps before it. */
  const more = (page: SessionStep[]) => page.length === limit && (first ?? 0) > 0;

  const panel: StepsPanel = {
    element,
    live: options.live,
    newer: () =>
      serial(async () => {
        if (last === undefined) {
          const page = await options.load({ limit });
          add(page, "end");
          earlierButton.hidden = !more(page);
          return;
        }
        // A burst (or a rejoin after a while away) may hold more than a page: read on to the end.
        for (;;) {
          const page = await options.load({ afterSeq: last, limit });
          add(page, "end");
          if (page.length < limit) return;
        }
      }),
    earlier: () =>
      serial(async () => {
        if (first === undefined) return;
        const page = await options.load({ beforeSeq: first, limit });
        add(page, "start");
        earlierButton.hidden = !more(page);
      }),
    focus: () => heading.focus(),
  };
  return panel;
}
