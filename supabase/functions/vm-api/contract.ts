/**
 * vm-api's bodies as types for its clients (the dashboard), inferred from the action schemas:
 * `VmApiRequest<"stop">` is what `{action: "stop", ...}` may hold, `VmApiResponse<"stop">` the
 * `data` of its success.
 */
import type { ActionName, actions } from "./actions.ts";
import type { RequestOf, ResponseOf } from "./action.ts";

export type { ActionName };
export type VmApiRequest<A extends ActionName> = RequestOf<(typeof actions)[A]>;
export type VmApiResponse<A extends ActionName> = ResponseOf<(typeof actions)[A]>;
