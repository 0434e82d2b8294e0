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
