/**
 * supabase/schemas/ and supabase/migrations/ describe one database: built each way on the Supabase
 * base objects, the two catalogs are the same, object for object.
 */
import assert from "node:assert/strict";
import postgres from "postgres";
import { catalogDifferences, catalogSnapshot } from "../helpers/catalog.ts";
import { applySchemas } from "../helpers/declarative_schemas.ts";
import { migrate } from "../../local/database/migrations.ts";

interface EmptyDatabase extends AsyncDisposable {
  url: string;
  sql: postgres.Sql;
}

async function emptyDatabase(): Promise<EmptyDatabase> {
  const adminUrl = Deno.env.get("TEST_DATABASE_URL");
  if (!adminUrl) {
    throw new Error("Run the tests with `deno task test`: it starts the test database");
  }
  const name = `drift_${crypto.randomUUID().replaceAll("-", "")}`;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database ${name}`);
  const url = adminUrl.replace(/\/[^/]*$/, `/${name}`);
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  return {
    url,
    sql,
    async [Symbol.asyncDispose]() {
      await sql.end({ timeout: 5 });
      await admin.unsafe(`drop database if exists ${name} with (force)`);
      await admin.end();
    },
  };
}

const names = { expected: "migrations", actual: "schemas" };

Deno.test("the migrations and supabase/schemas/ build the same catalog", async () => {
  await using fromMigrations = await emptyDatabase();
  await using fromSchemas = await emptyDatabase();
  await migrate(fromMigrations.url);
  await applySchemas(fromSchemas.url);
  const expected = await catalogSnapshot(fromMigrations.sql);
  const actual = await catalogSnapshot(fromSchemas.sql);
  // A snapshot that missed whole kinds of objects would compare equal for nothing.
  const kinds = new Set([...expected.keys()].map((key) => key.split(" ")[0]));
  for (const kind of ["relation", "column", "constraint", "index", "function", "trigger", "view"]) {
    assert.ok(kinds.has(kind), `the snapshot holds ${kind}s`);
  }
  for (const kind of ["policy", "schema", "default"]) assert.ok(kinds.has(kind), kind);
  assert.ok(expected.size > 500, `${expected.size} objects`);
  const differences = catalogDifferences(expected, actual, names);
  assert.equal(
    differences.length,
    0,
    `supabase/schemas/ and the migrations disagree (edit both, or write the migration):\n` +
      differences.join("\n"),
  );
});

Deno.test("the drift check names every object that differs, whatever its kind", async () => {
  await using database = await emptyDatabase();
  await applySchemas(database.url);
  const before = await catalogSnapshot(database.sql);
  await database.sql.unsafe(`
    create or replace function private.iso8601(p_at timestamptz) returns text
    language plpgsql immutable set search_path = '' as $$ begin return p_at::text; end; $$;
    alter table public.projects alter column region set default 'westeurope';
    grant select on public.projects to anon;
    drop index public.approvals_decided_by_idx;
    drop policy "Chat messages are visible to project members" on public.agent_messages;
    comment on table public.projects is 'changed';
    create table public.stray (id int);
  `);
  const after = await catalogSnapshot(database.sql);
  const named = catalogDifferences(before, after, names).map((line) => line.split("\n")[0]);
  assert.deepEqual(named, [
    "column public.projects.region: differs",
    "column public.stray.id: only in schemas",
    "function private.iso8601(p_at timestamp with time zone): differs",
    "index public.approvals_decided_by_idx: only in migrations",
    'policy public.agent_messages."Chat messages are visible to project members": only in migrations',
    "relation public.projects: differs",
    "relation public.stray: only in schemas",
  ]);
});

Deno.test("a database migrated before the squash is refused, with what to do", async () => {
  await using database = await emptyDatabase();
  await migrate(database.url);
  await database.sql`
    insert into supabase_migrations.schema_migrations (version, name)
    values ('20261121000100', 'foundation')`;
  await assert.rejects(
    () => migrate(database.url),
    /records migrations this repository no longer has \(20261121000100\).*deno task reset/s,
  );
});
