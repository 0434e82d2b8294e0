/** Small DOM helpers: the dashboard is plain DOM, no framework to download or learn. */

export type Child = Node | string | number | null | undefined | false;
type Props = Record<string, string | number | boolean | EventListener | undefined>;

/** An element with attributes, `on<event>` listeners and children; false/undefined are skipped. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: Props = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(props)) {
    if (value === undefined || value === false) continue;
    if (name.startsWith("on") && typeof value === "function") {
      element.addEventListener(name.slice(2), value);
    } else if (name === "value" && "value" in element) {
      (element as HTMLInputElement).value = String(value);
    } else {
      element.setAttribute(name, value === true ? "" : String(value));
    }
  }
  append(element, children);
  return element;
}

function append(parent: Node, children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    parent.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** Replaces what an element shows. */
export function show(element: Element, ...children: Child[]): void {
  element.replaceChildren();
  append(element, children);
}

/** "3 min ago", with the exact time as the tooltip. */
export function when(iso: string | null | undefined): HTMLElement {
  if (!iso) return h("span", {}, "—");
  const at = new Date(iso);
  const seconds = Math.round((Date.now() - at.getTime()) / 1000);
  const span = Math.abs(seconds);
  const amount = span < 60
    ? `${span} s`
    : span < 3600
    ? `${Math.floor(span / 60)} min`
    : span < 86_400
    ? `${Math.floor(span / 3600)} h`
    : undefined;
  const text = span < 5
    ? "just now"
    : amount === undefined
    ? at.toLocaleDateString()
    : seconds > 0
    ? `${amount} ago`
    : `in ${amount}`;
  return h("time", { datetime: at.toISOString(), title: at.toLocaleString() }, text);
}

/** A status word in its colour; the word itself carries the meaning, not the colour alone. */
export function badge(value: string | null | undefined): HTMLElement {
  const text = value ?? "unknown";
  return h("span", { class: `badge badge-${text.replace(/[^a-z_]/gi, "")}` }, text);
}

export function table(headers: string[], rows: Child[][], caption?: string): HTMLElement {
  if (rows.length === 0) return h("p", { class: "empty" }, "Nothing yet.");
  return h(
    "table",
    {},
    caption ? h("caption", {}, caption) : null,
    h("thead", {}, h("tr", {}, ...headers.map((title) => h("th", { scope: "col" }, title)))),
    h("tbody", {}, ...rows.map((cells) => h("tr", {}, ...cells.map((cell) => h("td", {}, cell))))),
  );
}

export function money(value: number | null | undefined): string {
  return `$${(value ?? 0).toFixed(2)}`;
}

export function count(value: number | null | undefined): string {
  return (value ?? 0).toLocaleString("en");
}

/**
 * Shows what `render` makes only when `data` differs from what the element shows already: a tick
 * that brings nothing new leaves the element (and what a person is typing in it) alone.
 */
export function showChanged(element: HTMLElement, data: unknown, render: () => Child[]): void {
  const signature = JSON.stringify(data);
  if (element.dataset.shown === signature) return;
  element.dataset.shown = signature;
  show(element, ...render());
}
