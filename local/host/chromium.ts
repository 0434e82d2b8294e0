/** The browser the dashboard's tests drive: Debian's `chromium`, installed when missing (as root). */
import { ensureDebianPackage } from "./debian_package.ts";

export const CHROMIUM = Deno.env.get("CHROMIUM_PATH") ?? "/usr/bin/chromium";

export async function ensureChromium(log: (line: string) => void): Promise<void> {
  await ensureDebianPackage("chromium", CHROMIUM, log);
}
