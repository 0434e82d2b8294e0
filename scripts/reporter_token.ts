/**
 * `deno task reporter-token <project_id> [--overlap-hours N] [--revoke]`
 *
 * Issues a new reporter token for a project and prints it as the last line of stdout, once: only
 * its SHA-256 is stored. Tokens issued earlier keep working for the overlap (default 24 h), so a
 * VM can be switched to the new one without a gap. `--revoke` revokes every token of the project
 * at once instead (a compromised VM). Uses DATABASE_URL, or the local cluster under `.local/`.
 */
import postgres from "postgres";
import { parseArgs } from "node:util";
import { newReporterToken } from "../supabase/functions/_shared/reporter_token.ts";
import { openLocalDatabase } from "../local/database/local_database.ts";
import { isUuid } from "../supabase/functions/_shared/uuid.ts";

const { values, positionals } = parseArgs({
  args: Deno.args,
  allowPositionals: true,
  options: { "overlap-hours": { type: "string", default: "24" }, revoke: { type: "boolean" } },
});
const projectId = positionals[0];
const overlapHours = Number(values["overlap-hours"]);
if (!projectId || !isUuid(projectId) || !(overlapHours >= 0)) {
  console.error("Usage: deno task reporter-token <project_id> [--overlap-hours N] [--revoke]");
  Deno.exit(2);
}

const database = await openLocalDatabase((line) => console.error(line));
const sql = postgres(database.url, { max: 1, onnotice: () => {} });
try {
  const [project] = await sql`select 1 from public.projects where id = ${projectId}`;
  if (!project) {
    console.error(`No project ${projectId}`);
    Deno.exitCode = 1;
  } else if (values.revoke) {
    const [{ revoked }] = await sql<[{ revoked: number }]>`
      select private.revoke_reporter_tokens(${projectId}) as revoked`;
    console.error(`Revoked ${revoked} token(s) of project ${projectId}`);
  } else {
    const token = await newReporterToken();
    await sql`
      select private.issue_reporter_token(
        ${projectId}, ${token.hash}, 'operator', ${`${overlapHours} hours`}::interval)`;
    console.error(
      `New reporter token for project ${projectId}; earlier tokens expire in ${overlapHours} h. ` +
        "It is shown once:",
    );
    console.log(token.plaintext);
  }
} finally {
  await sql.end();
  await database.stop();
}
