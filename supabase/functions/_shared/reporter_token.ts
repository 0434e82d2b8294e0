/**
 * The VM's secrets: 256 random bits behind a recognisable prefix (so a leaked one is easy to
 * spot in a scanner), stored and looked up only as their SHA-256.
 *
 * - reporter tokens (`vmr_`): what a VM presents on every reporter call;
 * - bootstrap credentials (`vmb_`): what a VM's boot data carries, exchanged once for a token.
 */
import { createHash } from "node:crypto";
import { base64url } from "./base64.ts";

export interface Secret {
  plaintext: string;
  hash: Uint8Array;
}

const SHAPE = /^vm[rb]_[A-Za-z0-9_-]{43}$/;

export const newReporterToken = () => newSecret("vmr_");
export const newBootstrapCredential = () => newSecret("vmb_");

export function looksLikeReporterToken(value: string): boolean {
  return SHAPE.test(value) && value.startsWith("vmr_");
}

export function looksLikeBootstrapCredential(value: string): boolean {
  return SHAPE.test(value) && value.startsWith("vmb_");
}

/**
 * Synchronous on purpose: WebCrypto's digest is an async operation handed to another thread,
 * which cost a tenth of a report's CPU (V8 profile under `deno task bench`) for 50 bytes.
 */
export function hashSecret(plaintext: string): Uint8Array {
  return new Uint8Array(createHash("sha256").update(plaintext).digest());
}

/** The hash as lowercase hex, as SQL's `decode(…, 'hex')` reads it from a JSON document. */
export function hashSecretHex(plaintext: string): string {
  return createHash("sha256").update(plaintext).digest("hex");
}

function newSecret(prefix: string): Promise<Secret> {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  const plaintext = prefix + base64url(bytes);
  return Promise.resolve({ plaintext, hash: hashSecret(plaintext) });
}
