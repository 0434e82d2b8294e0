/**
 * Secrets at rest: webhook signing secrets (contract §8) and project secrets (§10) are sealed here,
 * before any SQL call, so the database only ever holds their ciphertext. AES-256-GCM through
 * WebCrypto with the functions' one key (WEBHOOK_SECRET_KEY, `config.sealingKey`: the local stack
 * derives a fixed development key, hosted has none until an operator sets it). Stored form: the
 * 12-byte IV, then the ciphertext and its 16-byte tag; the tag makes a ciphertext altered (or
 * sealed under another key) fail to open rather than yield garbage.
 */
import { ApiError } from "../_contract/errors.ts";
import type { Config } from "./config.ts";
import type { Logger } from "./log.ts";

const IV_BYTES = 12;

export async function encryptSecret(key: Uint8Array, secret: string): Promise<Uint8Array> {
  const iv = crypto.getRandomValues(new Uint8Array(IV_BYTES));
  const sealed = await crypto.subtle.encrypt(
    { name: "AES-GCM", iv },
    await aesKey(key),
    new TextEncoder().encode(secret),
  );
  const stored = new Uint8Array(IV_BYTES + sealed.byteLength);
  stored.set(iv);
  stored.set(new Uint8Array(sealed), IV_BYTES);
  return stored;
}

export async function decryptSecret(key: Uint8Array, stored: Uint8Array): Promise<string> {
  // A copy on an ArrayBuffer of its own (the driver's bytes may sit on a shared pool).
  const bytes = new Uint8Array(stored);
  const plain = await crypto.subtle.decrypt(
    { name: "AES-GCM", iv: bytes.subarray(0, IV_BYTES) },
    await aesKey(key),
    bytes.subarray(IV_BYTES),
  );
  return new TextDecoder().decode(plain);
}

function aesKey(key: Uint8Array): Promise<CryptoKey> {
  return crypto.subtle.importKey("raw", new Uint8Array(key), "AES-GCM", false, [
    "encrypt",
    "decrypt",
  ]);
}

/** Sealed bytes as the SQL calls pass them (`decode($1, 'hex')`) and read them back (`encode`). */
export function toHex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

export function fromHex(hex: string): Uint8Array {
  return Uint8Array.from(hex.match(/../g) ?? [], (pair) => parseInt(pair, 16));
}

/**
 * The key project secrets are sealed and opened with, or the 503 of a hosted project whose
 * operator has not set WEBHOOK_SECRET_KEY yet (said once per refusal in the log, for operators).
 */
export function projectSecretsKey(config: Pick<Config, "sealingKey">, log: Logger): Uint8Array {
  if (config.sealingKey) return config.sealingKey;
  log.error("project secrets are off: WEBHOOK_SECRET_KEY is not set (32 bytes, base64)");
  throw new ApiError(
    "secrets_unavailable",
    "Project secrets are not available on this service yet: an operator must set its key.",
  );
}
