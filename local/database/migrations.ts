/**
 * Brings a database up to date: the Supabase base objects where they are missing, then every
 * pending file of `supabase/migrations/`, in name order, each in its own transaction, recorded in
 * `supabase_migrations.schema_migrations` (the table the Supabase CLI keeps, so `supabase db push`
 * and this runner agree on what has been applied). Safe to run from several processes at once.
 */
import postgres from "postgres";

const root = new URL("../../", import.meta.url);
const migrationsDir = new URL("supabase/migrations/", root);
const baseFile = new URL("local/database/supabase_base.sql", root);
const MIGRATION_LOCK = 7_260_001;

export interface Migration {
  version: string;
  name: string;
  path: URL;
}

export async function listMigrations(): Promise<Migration[]> {
  const migrations: Migration[] = [];
  for await (const entry of Deno.readDir(migrationsDir)) {
    const match = /^(\d{14})_(\w+)\.sql$/.exec(entry.name);
    if (!entry.isFile || !match) continue;
    migrations.push({
      version: match[1]!,
      name: match[2]!,
      path: new URL(entry.name, migrationsDir),
    });
  }
  return migrations.sort((a, b) => a.version.localeCompare(b.version));
}

/** The Supabase base objects (roles, auth, realtime) where they are missing: hosted has them all. */
export async function applyBaseObjects(
  sql: postgres.Sql,
  log: (line: string) => void = () => {},
): Promise<void> {
  const [{ has_base }] = await sql<[{ has_base: boolean }]>`
    select to_regclass('auth.refresh_tokens') is not null
       and exists (select 1 from pg_roles where rolname = 'authenticator')
       and to_regnamespace('graphql_public') is not null
       and to_regclass('realtime.messages') is not null as has_base`;
  if (has_base) return;
  log("creating the Supabase base objects (roles, auth and realtime schemas)");
  await sql.unsafe(await Deno.readTextFile(baseFile));
}

/** Applies what is missing and returns the versions applied by this call. */
export async function migrate(
  databaseUrl: string,
  log: (line: string) => void = () => {},
): Promise<string[]> {
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
  try {
    await sql`select pg_advisory_lock(${MIGRATION_LOCK})`;
    await applyBaseObjects(sql, log);
    await sql.unsafe(`
      create schema if not exists supabase_migrations;
      create table if not exists supabase_migrations.schema_migrations (
        version text primary key, statements text[], name text
      );`);
    const applied = new Set(
      (await sql<{ version: string }[]>`select version from supabase_migrations.schema_migrations`)
        .map((row) => row.version),
    );
    const known = new Set((await listMigrations()).map((migration) => migration.version));
    const unknown = [...applied].filter((version) => !known.has(version));
    if (unknown.length > 0) {
      throw new Error(
        `This database records migrations this repository no longer has (${unknown.join(", ")}): ` +
          "it was migrated before the migrations were squashed into one baseline. Reset it " +
          "(`deno task reset` locally, `supabase db reset --linked` for a hosted project) and " +
          "migrate again.",
      );
    }
    const done: string[] = [];
    for (const migration of await listMigrations()) {
      if (applied.has(migration.version)) continue;
      const text = await Deno.readTextFile(migration.path);
      await sql.begin(async (tx) => {
        await tx.unsafe(text);
        await tx`
          insert into supabase_migrations.schema_migrations (version, statements, name)
          values (${migration.version}, ${[text]}, ${migration.name})`;
      });
      log(`applied migration ${migration.version}_${migration.name}`);
      done.push(migration.version);
    }
    return done;
  } finally {
    await sql`select pg_advisory_unlock(${MIGRATION_LOCK})`.catch(() => {});
    await sql.end();
  }
}
