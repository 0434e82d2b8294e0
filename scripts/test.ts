/**
 * `deno task test`: type check, then every Deno test (the per-route and per-action files beside
 * the code in `supabase/functions/`, unit, integration, and the pgTAP files in
 * `supabase/tests/database/`, the dashboard's in Chromium) against a throw-away PostgreSQL cluster
 * that shares nothing with `deno task start`. Extra arguments go to `deno test` (e.g. a file or `--filter`).
 */
import { ensureChromium } from "../local/host/chromium.ts";
import { buildDashboard } from "../dashboard/build.ts";
import { ensurePgTap } from "../local/database/pgtap.ts";
import { startThrowawayDatabase } from "../local/database/throwaway_database.ts";

const say = (line: string) => console.log(`[test] ${line}`);

await ensurePgTap(say);
await ensureChromium(say);
// Built once here, so the servers the tests start find it fresh and never build it side by side.
await buildDashboard(say);
const check = await run("deno", ["task", "check"]);
if (check !== 0) Deno.exit(check);

const database = await startThrowawayDatabase("vm_service_template", say);
const junitDir = await Deno.makeTempDir({ prefix: "vm-service-junit-" });
const junit = `${junitDir}/junit.xml`;
let code = 1;
try {
  code = await run("deno", [
    "test",
    "-A",
    "--no-check",
    `--junit-path=${junit}`,
    ...(Deno.args.length ? Deno.args : ["tests/", "supabase/functions/"]),
  ], { TEST_DATABASE_URL: database.cluster.url, TEST_TEMPLATE_DATABASE: database.name });
  console.log(await summary(junit));
} finally {
  await database.stop();
  await Deno.remove(junitDir, { recursive: true }).catch(() => {});
}
Deno.exit(code);

async function run(cmd: string, args: string[], env: Record<string, string> = {}) {
  const { code } = await new Deno.Command(cmd, { args, env, stdout: "inherit", stderr: "inherit" })
    .output();
  return code;
}

/** The plain closing line CI reads: "N passed, N failed". */
async function summary(junitPath: string): Promise<string> {
  try {
    const xml = await Deno.readTextFile(junitPath);
    const cases = [...xml.matchAll(/<testcase\b[\s\S]*?(?:\/>|<\/testcase>)/g)].map((m) => m[0]);
    const failed = cases.filter((c) => /<failure\b|<error\b/.test(c)).length;
    return `tests: ${cases.length - failed} passed, ${failed} failed`;
  } catch {
    return "tests: 0 passed, 1 failed";
  }
}
