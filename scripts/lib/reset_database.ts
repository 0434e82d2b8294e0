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
    await admin.unsafe(`drop database if exists ${quoteIdent(name)} with (force)`);
    await admin.unsafe(`create database ${quoteIdent(name)}`);
  } finally {
    await admin.end();
  }
  await migrate(databaseUrl, log);
  await seed(databaseUrl);
  log("seeded supabase/seed.sql");
}

function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
