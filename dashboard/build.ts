/**
 * Builds the reference dashboard into `dashboard/dist/` (index.html, styles.css and app.js, the
 * TypeScript bundled for browsers by `deno bundle` with the repository's import map; and the
 * approval page an emailed link opens, approval.html with its own small approval.js): what
 * `deno task dashboard` does, and what `deno task start` does when the bundle is older than its
 * sources.
 */
const root = new URL("../", import.meta.url);
export const DASHBOARD_DIST = new URL("dashboard/dist/", root);

/** What the bundle is made of: the dashboard, the typed client, the types and the contract. */
const SOURCES = [
  "dashboard/",
  "supabase/client/",
  "supabase/types/",
  "supabase/functions/_contract/",
];

async function newestSource(path: URL): Promise<number> {
  const info = await Deno.stat(path);
  if (!info.isDirectory) return info.mtime?.getTime() ?? 0;
  let newest = 0;
  for await (const entry of Deno.readDir(path)) {
    if (entry.name === "dist") continue;
    const child = new URL(entry.isDirectory ? `${entry.name}/` : entry.name, path);
    newest = Math.max(newest, await newestSource(child));
  }
  return newest;
}

export async function dashboardIsStale(): Promise<boolean> {
  let built: number;
  try {
    built = (await Deno.stat(new URL("app.js", DASHBOARD_DIST))).mtime?.getTime() ?? 0;
  } catch {
    return true;
  }
  for (const source of SOURCES) {
    if (await newestSource(new URL(source, root)) > built) return true;
  }
  return false;
}

export async function buildDashboard(log: (line: string) => void): Promise<void> {
  await Deno.mkdir(DASHBOARD_DIST, { recursive: true });
  const approval = await bundle("dashboard/src/approval_page.ts", "approval");
  const app = await bundle("dashboard/src/main.ts", "app");
  for (const file of ["index.html", "approval.html", "styles.css"]) {
    const copy = new URL(`${file}.${crypto.randomUUID()}`, DASHBOARD_DIST);
    await Deno.copyFile(new URL(`dashboard/${file}`, root), copy);
    await Deno.rename(copy, new URL(file, DASHBOARD_DIST));
  }
  await Deno.rename(approval, new URL("approval.js", DASHBOARD_DIST));
  // app.js last: its time is what dashboardIsStale compares.
  await Deno.rename(app, new URL("app.js", DASHBOARD_DIST));
  log(`dashboard built into dashboard/dist/`);
}

/** Bundles `entry` beside the dist files; the caller renames it into place. */
async function bundle(entry: string, name: string): Promise<URL> {
  // Written beside and renamed into place: a server reading app.js never sees half of it.
  const building = new URL(`${name}.${crypto.randomUUID()}.js`, DASHBOARD_DIST);
  const result = await new Deno.Command(Deno.execPath(), {
    args: [
      "bundle",
      "--quiet",
      "--platform",
      "browser",
      "--minify",
      "-o",
      building.pathname,
      entry,
    ],
    cwd: root.pathname,
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!result.success) {
    await Deno.remove(building).catch(() => {});
    throw new Error(`the dashboard did not build:\n${new TextDecoder().decode(result.stderr)}`);
  }
  return building;
}

/** Builds the dashboard when its sources changed since the last build. */
export async function ensureDashboard(log: (line: string) => void): Promise<void> {
  if (await dashboardIsStale()) await buildDashboard(log);
}
