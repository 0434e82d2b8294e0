/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
/**
 * The reference dashboard: a client of the public surfaces only (supabase-js against the project's
 * URL and anon key, read from `config.json` beside the page), the same code locally and hosted.
 */
import { createDashboardClient } from "./data.ts";
import { startApp } from "./app.ts";
import { signIn } from "./sign_in.ts";
import { h, show } from "./ui.ts";

interface SiteConfig {
  supabaseUrl: string;
  anonKey: string;
}

const STORAGE_KEY = "vm-service-dashboard-session";
const root = document.getElementById("app")!;

async function boot(): Promise<void> {
  const config = await fetch("./config.json").then((r) => r.json() as Promise<SiteConfig>);
  const client = createDashboardClient(config.supabaseUrl, config.anonKey, {
    auth: { storageKey: STORAGE_KEY, persistSession: true, autoRefreshToken: true },
  });
  let shownFor: string | undefined;
  let stop: (() => void) | undefined;
  let hadSession = localStorage.getItem(STORAGE_KEY) !== null;
  let userSignedOut = false;
  let signInShown = false;

  const toSignIn = (notice: string) => {
    stop?.();
    stop = undefined;
    shownFor = undefined;
    signInShown = true;
    signIn(root, client, notice);
  };
  const signOut = () => {
    userSignedOut = true;
    void client.auth.signOut();
  };

  client.auth.onAuthStateChange((_event, session) => {
    // supabase-js asks its callbacks not to call it back synchronously: defer.
    setTimeout(async () => {
      if (!session) {
        // A session that was there and is gone without the user signing out ran out.
        const ended = hadSession && !userSignedOut;
        hadSession = false;
        userSignedOut = false;
        // supabase-js may tell twice (SIGNED_OUT, then INITIAL_SESSION): keep what was said.
        if (ended || !signInShown) toSignIn(ended ? "Your session has ended: sign in again." : "");
        return;
      }
      hadSession = true;
      if (shownFor === session.user.id) return;
      signInShown = false;
      stop?.();
      shownFor = session.user.id;
      try {
        stop = await startApp(
          root,
          client,
          { id: session.user.id, email: session.user.email ?? "" },
          toSignIn,
          signOut,
        );
      } catch {
        show(
          root,
          h(
            "main",
            { class: "center" },
            h("p", { role: "alert" }, "The service cannot be reached: reload to try again."),
          ),
        );
      }
    }, 0);
  });
}

boot().catch(() =>
  show(
    root,
    h(
      "main",
      { class: "center" },
      h("p", { role: "alert" }, "The dashboard could not start: reload to try again."),
    ),
  )
);
