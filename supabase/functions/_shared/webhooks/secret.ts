/**
 * Endpoint signing secrets (contract §8): `whsec_` + base64 of 32 random bytes, shown to the user
 * once and stored only sealed (../sealing.ts, AES-256-GCM with WEBHOOK_SECRET_KEY, as every secret
 * at rest).
 */
import { base64, decodeBase64 } from "../base64.ts";

const PREFIX = "whsec_";

export function newWebhookSecret(): string {
  return PREFIX + base64(crypto.getRandomValues(new Uint8Array(32)));
}

/** The key Standard Webhooks signs with: the base64-decoded part after `whsec_`. */
export function signingKeyOf(secret: string): Uint8Array {
  if (!secret.startsWith(PREFIX)) throw new Error("not a whsec_ secret");
  return decodeBase64(secret.slice(PREFIX.length));
}
