/**
 * A project of the local stack's real team, talked to as a member would: created through vm-api,
 * with `say` (a chat message, send_agent_message) and `asMember` (any statement as that member,
 * RLS applying); and `git` for reading what the team pushed.
 */
import assert from "node:assert/strict";
import type { Sql } from "../../supabase/functions/_shared/db.ts";
import type { Endpoint } from "./endpoint.ts";
import { createOrganization, createUser } from "./fixtures.ts";
import { vmApi } from "./vm_api.ts";

export interface TeamChat {
  projectId: string;
  /** The member: the project's owner. */
  userId: string;
  say(content: string): Promise<void>;
  asMember<T>(run: (tx: Sql) => Promise<T>): Promise<T>;
}

export async function teamChat(sql: Sql, server: Endpoint, name: string): Promise<TeamChat> {
  const user = await createUser(sql);
  const org = await createOrganization(sql, [user]);
  const created = await vmApi(server).call(user, {
    action: "create",
    organization_id: org,
    name,
  });
  assert.equal(created.status, 200);
  const projectId = (created.body.data as { project_id: string }).project_id;
  const asMember = <T>(run: (tx: Sql) => Promise<T>) =>
    sql.begin(async (tx) => {
      await tx`select set_config('role', 'authenticated', true),
        set_config('request.jwt.claims', ${
        JSON.stringify({ sub: user, role: "authenticated" })
      }, true)`;
      return await run(tx as unknown as Sql);
    }) as Promise<T>;
  return {
    projectId,
    userId: user,
    asMember,
    say: async (content) => {
      await asMember((tx) => tx`select public.send_agent_message(${projectId}, ${content})`);
    },
  };
}

/** git's answer, trimmed; a failure throws with git's words. */
export async function git(cwd: string, ...args: string[]): Promise<string> {
  const out = await new Deno.Command("git", { args, cwd, stdout: "piped", stderr: "piped" })
    .output();
  if (!out.success) {
    throw new Error(`git ${args.join(" ")}: ${new TextDecoder().decode(out.stderr)}`);
  }
  return new TextDecoder().decode(out.stdout).trim();
}
