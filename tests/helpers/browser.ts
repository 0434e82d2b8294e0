/**
 * Debian's Chromium driven by puppeteer-core: a page of the dashboard, found by what a person sees
 * (roles and accessible names), and screenshots of it kept under test-results/dashboard/.
 */
import puppeteer, { type Browser, type Page } from "puppeteer-core";
import { CHROMIUM } from "../../local/host/chromium.ts";

export const SCREENSHOTS = new URL("../../test-results/dashboard/", import.meta.url);

export async function launchBrowser(): Promise<Browser & AsyncDisposable> {
  const browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    // Root in a container has no user namespace for Chromium's sandbox.
    args: ["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"],
  });
  return Object.assign(browser, { [Symbol.asyncDispose]: () => browser.close() });
}

export async function openPage(browser: Browser, url: string): Promise<Page> {
  const page = await browser.newPage();
  await page.setViewport({ width: 1366, height: 900 });
  await page.goto(url);
  return page;
}

/** The control a person would use: its role and its exact accessible name. */
export function control(page: Page, name: string, role = "button") {
  return page.locator(`::-p-aria([name="${name}"][role="${role}"])`);
}

/**
 * Waits until `expression`, evaluated in the page, is true. A string: it runs in the browser,
 * where `document` is, not in this type-checked Deno program.
 */
export async function until(page: Page, expression: string, timeout = 30_000): Promise<void> {
  await page.waitForFunction(expression, { timeout, polling: 200 });
}

/** Waits until an element matching `selector` shows `text`. */
export async function waitForText(
  page: Page,
  selector: string,
  text: string,
  timeout = 30_000,
): Promise<void> {
  await until(
    page,
    `[...document.querySelectorAll(${JSON.stringify(selector)})]
      .some((e) => (e.textContent ?? "").includes(${JSON.stringify(text)}))`,
    timeout,
  );
}

export async function screenshot(page: Page, name: string): Promise<void> {
  await Deno.mkdir(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: new URL(`${name}.png`, SCREENSHOTS).pathname, fullPage: true });
}
