/**
 * `deno task test`: type check, then every Deno test (unit, integration, and the pgTAP files in
 * `supabase/tests/database/`) against a throw-away PostgreSQL cluster that shares nothing with
 * `deno task start`. Extra arguments go to `deno test` (e.g. a file or `--filter`).
 */
import { startCluster } from "./lib/postgres_cluster.ts";
import { migrate } from "./lib/migrations.ts";
import { ensurePgTap } from "./lib/pgtap.ts";
import postgres from "postgres";

const say = (line: string) => console.log(`[test] ${line}`);
const TEMPLATE = "vm_service_template";

await ensurePgTap(say);
await run("deno", ["task", "check"]);

const workDir = await Deno.makeTempDir({ prefix: "vm-service-test-" });
const cluster = await startCluster({ dataDir: `${workDir}/postgres`, log: say });
let code = 1;
try {
  const admin = postgres(cluster.url, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database ${TEMPLATE}`);
  await admin.end();
  const templateUrl = cluster.url.replace(/\/postgres$/, `/${TEMPLATE}`);
  await migrate(templateUrl, say);
  const junit = `${workDir}/junit.xml`;
  code = await run("deno", [
    "test",
    "-A",
    "--no-check",
    `--junit-path=${junit}`,
    ...(Deno.args.length ? Deno.args : ["tests/"]),
  ], { TEST_DATABASE_URL: cluster.url, TEST_TEMPLATE_DATABASE: TEMPLATE });
  console.log(await summary(junit));
} finally {
  await cluster.stop();
  await Deno.remove(workDir, { recursive: true }).catch(() => {});
}
Deno.exit(code);

async function run(cmd: string, args: string[], env: Record<string, string> = {}) {
  const { code } = await new Deno.Command(cmd, { args, env, stdout: "inherit", stderr: "inherit" })
    .output();
  if (cmd === "deno" && args[0] === "task" && code !== 0) Deno.exit(code);
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
