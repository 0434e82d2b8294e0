/**
 * `deno task statement-cost`: what the database spends on vm-reporter's hot statements alone, with
 * nothing else on the machine competing for the CPU: each route's statement as dispatch.ts runs it
 * (`statementOf`, prepared, one connection), for batches of unchanged reports of random projects
 * out of STATEMENT_PROJECTS (default 500), the statements taking turns for STATEMENT_ROUNDS rounds
 * (default 300) at each batch size of STATEMENT_BATCHES (default 1,6,24). Prints executor time per
 * request (pg_stat_statements) for each. `deno task bench` measures the service under load, where
 * a statement's wall time is mostly how often it loses its core; this isolates what a change to a
 * statement saves. The routes' bodies are parsed by their schemas, as the server does.
 */
import postgres from "postgres";
import { hashSecretHex, newReporterToken } from "../supabase/functions/_shared/reporter_token.ts";
import { statementOf } from "../supabase/functions/vm-reporter/dispatch.ts";
import type { RouteStatement } from "../supabase/functions/vm-reporter/route.ts";
import { routes } from "../supabase/functions/vm-reporter/routes.ts";
import { startThrowawayDatabase } from "../local/database/throwaway_database.ts";
import { seedFleet } from "./fleet_seed.ts";
import { health, sessions, steps } from "./report_bodies.ts";

const PROJECTS = Number(Deno.env.get("STATEMENT_PROJECTS") ?? 500);
const ROUNDS = Number(Deno.env.get("STATEMENT_ROUNDS") ?? 300);
const BATCHES = (Deno.env.get("STATEMENT_BATCHES") ?? "1,6,24").split(",").map(Number);
const say = (line: string) => console.error(`[statement-cost] ${line}`);

/** What each row measures: a route's statement and a body of its, or the admission alone. */
const measured: { name: string; statement: RouteStatement; body: () => unknown }[] = [
  {
    name: "admission alone (token, rate limit)",
    statement: { data: "null::jsonb" },
    body: () => ({}),
  },
  ...([
    ["/health", health, ""],
    ["/commands/poll", () => ({ max: 10 }), ""],
    ["/metrics/cli-sessions", sessions, ""],
    ["/sessions/steps", steps, " (5 steps)"],
  ] as const).map(([path, body, note]) => {
    const route = routes[path]!;
    const name = path + note;
    return { name, statement: route.statement, body: () => route.schema.parse(body()) };
  }),
];

const database = await startThrowawayDatabase("statement_cost", say, {
  shared_preload_libraries: "pg_stat_statements",
});
const connect = () => postgres(database.url, { max: 1, onnotice: () => {} });
let sql = connect();
try {
  await sql`create extension pg_stat_statements`;
  say(`seeding ${PROJECTS} projects with reporter tokens`);
  const { projects } = await seedFleet(sql, PROJECTS, "statements");
  const hashes = await Promise.all(
    projects.map(async () => hashSecretHex((await newReporterToken()).plaintext)),
  );
  await sql`
    insert into private.reporter_tokens (project_id, token_hash, source)
    select p, decode(h, 'hex'), 'operator'
    from unnest(${projects.map((p) => p.id)}::uuid[], ${hashes}::text[]) as t (p, h)`;
  const settings = { rate_limit: 1e9, unauthenticated_limit: 1e9, command_lease_seconds: 60 };
  const texts = measured.map((m) => `/* statement-cost:${m.name} */ ${statementOf(m.statement)}`);
  const run = (i: number, picked: number[]) =>
    sql.unsafe(texts[i]!, [
      sql.json(picked.map((p) => ({
        project_id: projects[p]!.id,
        token_hash: hashes[p],
        body: measured[i]!.body(),
      })) as never),
      sql.json(settings as never),
    ] as never[], { prepare: true });
  const pick = (size: number) => {
    const picked = new Set<number>();
    while (picked.size < Math.min(size, projects.length)) {
      picked.add(Math.floor(Math.random() * projects.length));
    }
    return [...picked];
  };

  // Every project's team reported once (later reports change nothing, as most do), then the
  // statistics the bench's windows also start from, and plans made on them.
  const healthIndex = measured.findIndex((m) => m.name === "/health");
  for (let i = 0; i < projects.length; i += 50) {
    await run(healthIndex, projects.slice(i, i + 50).map((_, j) => i + j));
  }
  await sql`vacuum (analyze)`;
  await sql.end();
  sql = connect();
  for (let round = 0; round < 50; round++) {
    for (let i = 0; i < measured.length; i++) await run(i, pick(6));
  }

  const perRequest = new Map<string, number[]>();
  for (const size of BATCHES) {
    await sql`select pg_stat_statements_reset()`;
    for (let round = 0; round < ROUNDS; round++) {
      for (let i = 0; i < measured.length; i++) await run(i, pick(size));
    }
    const rows = await sql<{ query: string; ms: number; calls: number }[]>`
      select query, total_exec_time as ms, calls::int from pg_stat_statements
      where query like '/* statement-cost:%'`;
    for (const m of measured) {
      const row = rows.find((r) => r.query.startsWith(`/* statement-cost:${m.name} */`));
      const us = row ? (row.ms * 1000) / (row.calls * size) : NaN;
      perRequest.set(m.name, [...(perRequest.get(m.name) ?? []), us]);
    }
  }
  console.log(
    `\n${PROJECTS} projects, ${ROUNDS} rounds, executor µs per request (pg_stat_statements)\n`,
  );
  console.log(`| statement | ${BATCHES.map((b) => `batch of ${b}`).join(" | ")} |`);
  console.log(`|---|${BATCHES.map(() => "---:").join("|")}|`);
  for (const [name, values] of perRequest) {
    console.log(`| ${name} | ${values.map((v) => v.toFixed(1)).join(" | ")} |`);
  }
} finally {
  await sql.end();
  await database.stop();
}
