/**
 * A horizontal bar chart as SVG, for figures a person would rather compare at a glance than read.
 * The numbers stay in the table beside it; the chart's label says what it shows.
 */
const SVG = "http://www.w3.org/2000/svg";

export interface Bar {
  label: string;
  value: number;
}

export function barChart(title: string, bars: Bar[], format: (value: number) => string): Element {
  const rowHeight = 26;
  const labelWidth = 140;
  const width = 520;
  const height = Math.max(1, bars.length) * rowHeight + 8;
  const max = Math.max(1e-9, ...bars.map((bar) => bar.value));
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.setAttribute("class", "chart");
  svg.setAttribute("role", "img");
  svg.setAttribute(
    "aria-label",
    `${title}: ${bars.map((bar) => `${bar.label} ${format(bar.value)}`).join(", ") || "no data"}`,
  );
  bars.forEach((bar, index) => {
    const y = index * rowHeight + 4;
    const barWidth = Math.max(2, ((width - labelWidth - 80) * bar.value) / max);
    svg.append(
      node("text", { x: 0, y: y + 16, class: "chart-label" }, truncate(bar.label, 20)),
      node("rect", {
        x: labelWidth,
        y,
        width: barWidth,
        height: rowHeight - 8,
        rx: 3,
        class: "chart-bar",
      }),
      node(
        "text",
        { x: labelWidth + barWidth + 6, y: y + 16, class: "chart-value" },
        format(bar.value),
      ),
    );
  });
  const figure = document.createElement("figure");
  const caption = document.createElement("figcaption");
  caption.textContent = title;
  figure.append(caption, svg);
  return figure;
}

function node(tag: string, attributes: Record<string, string | number>, text?: string): Element {
  const element = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, String(value));
  if (text !== undefined) element.textContent = text;
  return element;
}

function truncate(text: string, length: number): string {
  return text.length > length ? `${text.slice(0, length - 1)}…` : text;
}

/** What a month-to-date bar shows: spend apart by kind, against the budget when there is one. */
export interface Spend {
  model: number;
  compute: number;
  /** null: no monthly budget. */
  budget: number | null;
  /** budget.threshold_reached is told at this share of the budget. */
  alertPercent: number;
}

const SPEND_COLORS = { model: "#4f46e5", compute: "#0891b2", track: "#e5e7eb", mark: "#111827" };

/**
 * One bar a person reads at a glance: model and compute cost side by side on a track as long as
 * the budget (or the spend, past it), a tick at the alert share and a line at the budget; the
 * figures are in its caption, legend and accessible name.
 */
export function spendBar(title: string, spend: Spend, format: (value: number) => string): Element {
  const width = 520;
  const barTop = 8;
  const barHeight = 26;
  const height = 72;
  const total = spend.model + spend.compute;
  const scale = Math.max(1e-9, spend.budget ?? 0, total);
  const x = (value: number) => (width * value) / scale;
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.setAttribute("class", "chart spend-bar");
  svg.setAttribute("role", "img");
  const share = spend.budget ? ` (${Math.round((100 * total) / spend.budget)}% of the budget)` : "";
  svg.setAttribute(
    "aria-label",
    `${title}: ${format(total)}${spend.budget ? ` of ${format(spend.budget)}` : ""}${share}; ` +
      `model ${format(spend.model)}, compute ${format(spend.compute)}`,
  );
  svg.append(
    node("rect", {
      x: 0,
      y: barTop,
      width,
      height: barHeight,
      rx: 4,
      fill: SPEND_COLORS.track,
    }),
    node("rect", {
      x: 0,
      y: barTop,
      width: x(spend.model),
      height: barHeight,
      fill: SPEND_COLORS.model,
      class: "spend-model",
    }),
    node("rect", {
      x: x(spend.model),
      y: barTop,
      width: x(spend.compute),
      height: barHeight,
      fill: SPEND_COLORS.compute,
      class: "spend-compute",
    }),
  );
  if (spend.budget) {
    const alert = x((spend.budget * spend.alertPercent) / 100);
    const budget = Math.min(width - 1, x(spend.budget));
    svg.append(
      node("line", {
        x1: alert,
        x2: alert,
        y1: barTop - 4,
        y2: barTop + barHeight + 4,
        stroke: SPEND_COLORS.mark,
        "stroke-dasharray": "3 3",
      }),
      node("line", {
        x1: budget,
        x2: budget,
        y1: barTop - 6,
        y2: barTop + barHeight + 6,
        stroke: SPEND_COLORS.mark,
        "stroke-width": 2,
      }),
      node(
        "text",
        {
          x: Math.max(0, alert - 4),
          y: barTop + barHeight + 20,
          "text-anchor": "end",
          class: "chart-label",
        },
        `alert ${spend.alertPercent}%`,
      ),
      node(
        "text",
        { x: budget, y: barTop + barHeight + 20, "text-anchor": "end", class: "chart-value" },
        `budget ${format(spend.budget)}`,
      ),
    );
  }
  const legend = document.createElement("p");
  legend.className = "spend-legend";
  for (const [kind, value] of [["model", spend.model], ["compute", spend.compute]] as const) {
    // An SVG swatch: the page's policy allows no inline style.
    const swatch = document.createElementNS(SVG, "svg");
    swatch.setAttribute("viewBox", "0 0 10 10");
    swatch.setAttribute("width", "12");
    swatch.setAttribute("height", "12");
    swatch.setAttribute("aria-hidden", "true");
    swatch.append(node("rect", { width: 10, height: 10, rx: 2, fill: SPEND_COLORS[kind] }));
    legend.append(" ", swatch, ` ${kind === "model" ? "Model" : "Compute"} ${format(value)} `);
  }
  const figure = document.createElement("figure");
  const caption = document.createElement("figcaption");
  caption.textContent = `${title}: ${format(total)}${
    spend.budget ? ` of ${format(spend.budget)}${share}` : " (no monthly budget)"
  }`;
  figure.append(caption, svg, legend);
  return figure;
}
