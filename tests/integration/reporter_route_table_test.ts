/**
 * A reporter route is one unit: the TypeScript route table (path → SQL entry point) and the SQL
 * one (private.reporter_routes) must name the same routes and functions, each taking
 * (uuid, jsonb, jsonb) and answering jsonb, callable by the dispatcher's owner only.
 */
import assert from "node:assert/strict";
import { routeList } from "../../supabase/functions/vm-reporter/routes.ts";
import { createTestDatabase } from "../helpers/database.ts";

Deno.test("the TypeScript and SQL reporter route tables match", async (t) => {
  await using db = await createTestDatabase();
  const rows = await db.sql<
    { path: string; name: string; args: string; returns: string; for_authenticated: boolean }[]
  >`
    select r.path, n.nspname || '.' || p.proname as name,
           pg_get_function_identity_arguments(p.oid) as args,
           format_type(p.prorettype, null) as returns,
           has_function_privilege('authenticated', p.oid, 'execute') as for_authenticated
    from private.reporter_routes r
    join pg_proc p on p.oid = r.handler
    join pg_namespace n on n.oid = p.pronamespace
    order by r.path`;

  await t.step("every route of each table is in the other, with the same function", () => {
    const sql = Object.fromEntries(rows.map((r) => [r.path, r.name]));
    const ts = Object.fromEntries(routeList.map((route) => [route.path, route.sql]));
    assert.deepEqual(sql, ts);
  });

  await t.step("every handler has the dispatcher's signature and is not a public API", () => {
    for (const row of rows) {
      assert.equal(row.args, "p_project_id uuid, p_body jsonb, p_settings jsonb", row.path);
      assert.equal(row.returns, "jsonb", row.path);
      assert.equal(row.for_authenticated, false, row.path);
    }
  });

  await t.step("a path without a row is a 404 from SQL, not an error", async () => {
    const [{ answer }] = await db.sql<[{ answer: { status: number; error: string } }]>`
      with project as (
        insert into public.organizations (name) values ('o') returning id
      ), p as (
        insert into public.projects (organization_id, name, status)
        select id, 'p', 'active' from project returning id
      ), token as (
        insert into private.reporter_tokens (project_id, token_hash, source)
        select id, sha256('vmr_route_table'::bytea), 'operator' from p returning project_id
      )
      select private.reporter_call(
        (select project_id from token), sha256('vmr_route_table'::bytea), '/nope', '{}',
        '{"rate_limit": 100, "unauthenticated_limit": 30, "command_lease_seconds": 900}'
      ) as answer`;
    assert.deepEqual(answer, { status: 404, error: "Unknown route" });
  });
});
