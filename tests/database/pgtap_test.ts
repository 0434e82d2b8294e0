/**
 * Runs every pgTAP file of `supabase/tests/database/` (the `supabase test db` convention) in a fresh
 * database of its own and fails on any `not ok`, a plan that was not met, or an SQL error.
 */
import assert from "node:assert/strict";
import { findPostgresBin } from "../../local/database/postgres_cluster.ts";
import { createTestDatabase } from "../helpers/database.ts";

const dir = new URL("../../supabase/tests/database/", import.meta.url);
const files = [...Deno.readDirSync(dir)]
  .filter((e) => e.isFile && e.name.endsWith(".sql"))
  .map((e) => e.name)
  .sort();
const psql = `${await findPostgresBin()}/psql`;

for (const file of files) {
  Deno.test(`pgTAP: ${file}`, async () => {
    await using db = await createTestDatabase();
    // As `supabase test db` does: pgTAP in `extensions`, each file run whole by psql as `postgres`
    // with the role's own search_path (hosted: "$user", public, extensions).
    await db.sql`create extension if not exists pgtap with schema extensions`;
    const result = await new Deno.Command(psql, {
      args: [
        "--no-psqlrc",
        "--quiet",
        "--tuples-only",
        "--no-align",
        "-v",
        "ON_ERROR_STOP=1",
        "-f",
        new URL(file, dir).pathname,
        db.url,
      ],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const out = new TextDecoder().decode(result.stdout);
    const err = new TextDecoder().decode(result.stderr);
    assert.ok(result.success, `psql failed:\n${out}\n${err}`);
    const plan = /^1\.\.(\d+)$/m.exec(out);
    assert.ok(plan, `no plan in the output:\n${out}`);
    const oks = out.split("\n").filter((l) => /^ok \d+/.test(l)).length;
    const notOks = out.split("\n").filter((l) => /^not ok \d+/.test(l));
    assert.deepEqual(notOks, [], `failing assertions:\n${out}\n${err}`);
    assert.equal(oks, Number(plan[1]), `planned ${plan[1]} but ${oks} passed:\n${out}\n${err}`);
  });
}
