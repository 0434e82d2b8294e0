/**
 * The page's one notice: a confirmation fades after a few seconds, an error stays until the next
 * one, and an ended session goes back to sign-in.
 */
import type { DashboardClient } from "../data.ts";
import { explain } from "../errors.ts";
import { h, show } from "../ui.ts";

export function pageNotice(client: DashboardClient, signedOut: (notice: string) => void) {
  const notice = h("p", { class: "notice", role: "status", "aria-live": "polite" });
  const fail = (error: unknown) => {
    const { message, signedOut: over } = explain(error);
    if (over) {
      void client.auth.signOut({ scope: "local" });
      signedOut(message);
      return;
    }
    show(notice, message);
    notice.className = "notice error";
  };
  let quiet: ReturnType<typeof setTimeout> | undefined;
  const say = (message: string) => {
    show(notice, message);
    notice.className = "notice";
    // A confirmation has done its work after a few seconds; an error stays until the next one.
    clearTimeout(quiet);
    quiet = setTimeout(() => notice.className === "notice" && show(notice), 8_000);
  };
  return { notice, say, fail };
}
