/**
 * Recreates a local database from nothing, like `supabase db reset`: drop it (ending its
 * connections), create it empty, apply the Supabase base objects and every migration, then the
 * seed. Refuses anything that is not on this machine.
 */
import postgres from "postgres";
import { migrate } from "./migrations.ts";
import { seed } from "./seed.ts";

const LOOPBACK = new Set(["127.0.0.1", "localhost", "[::1]", ""]);

export async function resetDatabase(
  databaseUrl: string,
  log: (line: string) => void,
): Promise<void> {
  const url = new URL(databaseUrl);
  if (!LOOPBACK.has(url.hostname)) {
    throw new Error(`Refusing to reset ${url.hostname}: only a database on this machine is reset`);
  }
  const name = decodeURIComponent(url.pathname.slice(1));
  if (!name || name === "template1") throw new Error("The database URL names no database to reset");
  const maintenance = new URL(databaseUrl);
  maintenance.pathname = "/template1";
  const admin = postgres(maintenance.href, { max: 1, onnotice: () => {} });
  try {
    log(`dropping and recreating database ${name}`);
    await dropDatabase(admin, name);
    await admin.unsafe(`create database ${quoteIdent(name)}`);
  } finally {
    await admin.end();
  }
  await migrate(databaseUrl, log);
  await seed(databaseUrl);
  log("seeded supabase/seed.sql");
}

const DROP_ATTEMPTS = 5;

/**
 * `drop ... with (force)` ends the database's connections but not its logical replication (the
 * local Realtime server's slot), which a running stack may also take again at once: the slots'
 * senders are ended and their slots dropped, then the database, a few times if needed.
 */
async function dropDatabase(admin: postgres.Sql, name: string): Promise<void> {
  for (let attempt = 1;; attempt++) {
    await admin`
      select pg_terminate_backend(active_pid) from pg_replication_slots
      where database = ${name} and active_pid is not null`;
    await admin`
      select pg_drop_replication_slot(slot_name) from pg_replication_slots
      where database = ${name} and not active`.catch(() => {});
    try {
      await admin.unsafe(`drop database if exists ${quoteIdent(name)} with (force)`);
      return;
    } catch (error) {
      if (attempt >= DROP_ATTEMPTS || !/replication slot/i.test(String(error))) throw error;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}

function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
