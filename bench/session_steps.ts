/**
 * `deno task session-steps`: what live sessions' steps (contract §17) cost the platform, on this
 * machine: how many steps a second `POST /vm-reporter/sessions/steps` takes (batches of
 * STEPS_BATCH, default 50, from STEPS_CONCURRENCY clients, default 16, for STEPS_SECONDS, default
 * 5, each batch for a random project out of STEPS_PROJECTS, default 200) against the real server
 * (scripts/start.ts) on a throw-away cluster, and the size in the database of one 2,000-step
 * session (its rows, their indexes, a realistic mix of kinds and details).
 */
import postgres from "postgres";
import { hashSecretHex, newReporterToken } from "../supabase/functions/_shared/reporter_token.ts";
import { startThrowawayDatabase } from "../local/database/throwaway_database.ts";
import { spawnService } from "../local/host/spawn_service.ts";
import { seedFleet } from "./fleet_seed.ts";

const PROJECTS = Number(Deno.env.get("STEPS_PROJECTS") ?? 200);
const BATCH = Number(Deno.env.get("STEPS_BATCH") ?? 50);
const CONCURRENCY = Number(Deno.env.get("STEPS_CONCURRENCY") ?? 16);
const SECONDS = Number(Deno.env.get("STEPS_SECONDS") ?? 5);
const say = (line: string) => console.error(`[session-steps] ${line}`);

const database = await startThrowawayDatabase("session_steps_bench", say);
const sql = postgres(database.url, { max: 4, onnotice: () => {} });
try {
  const { projects } = await seedFleet(sql, PROJECTS, "steps");
  const tokens = await Promise.all(projects.map(() => newReporterToken()));
  await sql`
    insert into private.reporter_tokens (project_id, token_hash, source)
    select p, decode(h, 'hex'), 'operator'
    from unnest(${projects.map((p) => p.id)}::uuid[],
      ${tokens.map((t) => hashSecretHex(t.plaintext))}::text[]) as t (p, h)`;
  await using service = await spawnService(new URL("../scripts/start.ts", import.meta.url), {
    DATABASE_URL: database.url,
    LOG_LEVEL: "warn",
    VM_REPORTER_RATE_LIMIT: "1000000000",
    RECONCILE_INTERVAL_MS: "3600000",
    COMPUTE_DRIVER: "local",
  });
  const url = `${service.origin}/functions/v1/vm-reporter/sessions/steps`;
  const step = (session: string, seq: number) => ({
    session_id: session,
    seq,
    agent: "builder",
    at: new Date().toISOString(),
    kind: (["text", "tool_use", "tool_result"] as const)[seq % 3],
    ...(seq % 3 === 0 ? {} : { tool: "Bash" }),
    summary: `npm test -- --grep step ${seq}`,
    detail: "x".repeat(seq % 3 === 2 ? 1_500 : 200),
  });

  let steps = 0;
  let failures = 0;
  const latencies: number[] = [];
  const deadline = performance.now() + SECONDS * 1000;
  await Promise.all(Array.from({ length: CONCURRENCY }, async (_, client) => {
    let seq = 0;
    const session = `bench-${client}-${crypto.randomUUID()}`;
    while (performance.now() < deadline) {
      const i = Math.floor(Math.random() * projects.length);
      const body = { steps: Array.from({ length: BATCH }, () => step(session, seq++)) };
      const started = performance.now();
      const answer = await fetch(url, {
        method: "POST",
        headers: {
          authorization: `Bearer ${tokens[i]!.plaintext}`,
          "x-project-id": projects[i]!.id,
          "content-type": "application/json",
        },
        body: JSON.stringify(body),
      });
      await answer.body?.cancel();
      latencies.push(performance.now() - started);
      if (answer.ok) steps += BATCH;
      else failures++;
    }
  }));
  latencies.sort((a, b) => a - b);
  const pct = (p: number) => latencies[Math.floor(p * (latencies.length - 1))]!.toFixed(1);

  // One 2,000-step session, alone in its own partition's rows: its size with its index.
  const project = projects[0]!;
  const session = `size-${crypto.randomUUID()}`;
  for (let from = 0; from < 2_000; from += 200) {
    const answer = await fetch(url, {
      method: "POST",
      headers: {
        authorization: `Bearer ${tokens[0]!.plaintext}`,
        "x-project-id": project.id,
        "content-type": "application/json",
      },
      body: JSON.stringify({
        steps: Array.from({ length: 200 }, (_, k) => step(session, from + k)),
      }),
    });
    await answer.body?.cancel();
  }
  const [size] = await sql<[{ rows: number; bytes: number }]>`
    select count(*)::int as rows,
      sum(pg_column_size(s.*))::bigint as bytes
    from private.session_steps s where s.session_id = ${session}`;
  console.log(`| steps a second | batches | p50 ms | p95 ms | p99 ms | failed |`);
  console.log(`| ---: | ---: | ---: | ---: | ---: | ---: |`);
  console.log(
    `| ${(steps / SECONDS).toFixed(0)} | ${latencies.length} | ${pct(0.5)} | ${pct(0.95)} | ${
      pct(0.99)
    } | ${failures} |`,
  );
  console.log(
    `a 2,000-step session: ${size.rows} rows, ${(Number(size.bytes) / 1024).toFixed(0)} KiB of ` +
      "row data (before its index)",
  );
} finally {
  await sql.end();
  await database.stop();
}
