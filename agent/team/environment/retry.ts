/**
 * `retry_setup {agents?}` (contract §20): a person asks for a failed setup again. The agents' last
 * setup results are forgotten and their tasks waiting on it are due at once, so setup runs again
 * before their next session, now.
 */
import type { Team } from "../team_context.ts";
import { forgetSetup } from "./setup.ts";

export async function retrySetup(team: Team, agents: string[]): Promise<void> {
  for (const agent of agents) await forgetSetup(`${team.agentsDir}/${agent}`);
  for (const task of await team.board.list()) {
    const held = task.outcome?.startsWith("Setup failed");
    if (task.status === "assigned" && agents.includes(task.agent) && held) {
      await team.board.update(task.id, { not_before: new Date().toISOString() });
    }
  }
}
