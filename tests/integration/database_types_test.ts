/**
 * supabase/types/database.ts is the migrated database's Database type: a migration that changes
 * what the Data API exposes without `deno task gen-types` fails here.
 */
import assert from "node:assert/strict";
import { createTestDatabase } from "../helpers/database.ts";
import { DATABASE_TYPES_FILE, databaseTypesText } from "../../scripts/gen_types.ts";

Deno.test("supabase/types/database.ts matches the migrated database (run `deno task gen-types`)", async () => {
  await using db = await createTestDatabase();
  assert.equal(await databaseTypesText(db.url), await Deno.readTextFile(DATABASE_TYPES_FILE));
});

Deno.test("the Database type holds every exposed table, view and RPC", async () => {
  const text = await Deno.readTextFile(DATABASE_TYPES_FILE);
  for (
    const name of [
      "projects",
      "project_members",
      "project_activity_feed",
      "agent_status",
      "project_logs",
      "cost_by_model",
      "queue_vm_command",
      "send_agent_message",
      "decide_approval",
      "save_persona_file",
    ]
  ) {
    assert.match(text, new RegExp(`^ {6}${name}: \\{`, "m"), `${name} is missing`);
  }
});
