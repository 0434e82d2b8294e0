/**
 * create, start, stop and delete are the same request shape: call one transition function as the
 * user, then send the operation it recorded.
 */
import type { UserCall } from "../_shared/as_user.ts";
import type { z } from "zod";
import type { projectStatus } from "../_contract/fields.ts";
import type { ClaimedOperation } from "../_shared/operations.ts";
import type { ActionContext } from "./action.ts";

/**
 * What the transition functions return; the operation is for the dispatcher, not the caller. No
 * operation: the request repeated one already under way (a force delete while deleting).
 */
export interface TransitionResult {
  project_id: string;
  status: z.output<typeof projectStatus>;
  operation: ClaimedOperation | null;
}

export async function requestTransition(
  ctx: ActionContext,
  call: UserCall,
): Promise<Omit<TransitionResult, "operation">> {
  const result = await ctx.asUser<TransitionResult>(call);
  if (result.operation) ctx.dispatch(result.operation);
  return { project_id: result.project_id, status: result.status };
}
