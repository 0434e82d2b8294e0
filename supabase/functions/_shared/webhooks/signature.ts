/**
 * Standard Webhooks 1.0 signatures: `v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">`, one
 * per valid secret, space-separated (a rotation signs with the new and the previous secret, so a
 * receiver holding either verifies).
 */
import { base64 } from "../base64.ts";
import { signingKeyOf } from "./secret.ts";

export async function signatureHeader(
  secrets: readonly string[],
  id: string,
  timestampSeconds: number,
  body: string,
): Promise<string> {
  const content = new TextEncoder().encode(`${id}.${timestampSeconds}.${body}`);
  const signatures = await Promise.all(secrets.map(async (secret) => {
    const key = await crypto.subtle.importKey(
      "raw",
      new Uint8Array(signingKeyOf(secret)),
      { name: "HMAC", hash: "SHA-256" },
      false,
      ["sign"],
    );
    return `v1,${base64(new Uint8Array(await crypto.subtle.sign("HMAC", key, content)))}`;
  }));
  return signatures.join(" ");
}
