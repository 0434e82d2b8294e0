/**
 * A new signing secret for an endpoint, sealed for the database: the plaintext goes back to the
 * user once and nowhere else.
 */
import { ApiError } from "../_contract/errors.ts";
import { urlProblem } from "../_shared/webhooks/post.ts";
import { encryptSecret, toHex } from "../_shared/sealing.ts";
import { newWebhookSecret } from "../_shared/webhooks/secret.ts";
import type { ActionContext } from "./action.ts";

export async function sealedSecret(
  ctx: ActionContext,
): Promise<{ secret: string; sealedHex: string }> {
  const key = ctx.services.config.webhooks.secretKey;
  if (!key) {
    ctx.log.error("webhooks are off: WEBHOOK_SECRET_KEY is not set (32 bytes, base64)");
    throw new ApiError("webhooks_unavailable", "Webhooks are not available on this service yet.");
  }
  const secret = newWebhookSecret();
  const sealed = await encryptSecret(key, secret);
  return { secret, sealedHex: toHex(sealed) };
}

/** Refuses a URL that can never be a target (scheme, credentials, a private address literal). */
export function assertTargetUrl(ctx: ActionContext, value: string): void {
  const problem = urlProblem(value, ctx.services.config.webhooks.allowPrivateUrls);
  if (problem) throw new ApiError("invalid_request", `url: ${problem}`);
}
