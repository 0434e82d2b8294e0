/**
 * The webhooks function's bodies as types for its clients, inferred from the action schemas:
 * `WebhooksRequest<"create">` is what `{action: "create", ...}` may hold, `WebhooksResponse<"create">`
 * the `data` of its success.
 */
import type { ActionName, actions } from "./actions.ts";
import type { RequestOf, ResponseOf } from "./action.ts";

export type { ActionName as WebhooksActionName };
export type WebhooksRequest<A extends ActionName> = RequestOf<(typeof actions)[A]>;
export type WebhooksResponse<A extends ActionName> = ResponseOf<(typeof actions)[A]>;
