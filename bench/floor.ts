/**
 * The bench's floor, run as its own process like the service: the least a report could cost on
 * this machine and database — `Deno.serve`, parse the JSON body, one `INSERT … RETURNING` through
 * postgres.js (pool of 10, as the functions use). Prints `ready: <origin>` like `deno task start`.
 */
import postgres from "postgres";

const sql = postgres(Deno.env.get("DATABASE_URL")!, { max: 10, onnotice: () => {} });
await sql`
  create table if not exists public.bench_floor (
    id bigint generated always as identity primary key,
    project_id uuid not null,
    body jsonb not null,
    created_at timestamptz not null default now()
  )`;

Deno.serve({
  hostname: "127.0.0.1",
  port: 0,
  onListen: ({ port }) => console.log(`ready: http://127.0.0.1:${port}`),
}, async (request) => {
  const body = await request.json();
  const [row] = await sql<[{ id: string }]>`
    insert into public.bench_floor (project_id, body)
    values (${request.headers.get("x-project-id")}, ${sql.json(body)})
    returning id`;
  return Response.json({ success: true, data: { id: row.id } });
});
