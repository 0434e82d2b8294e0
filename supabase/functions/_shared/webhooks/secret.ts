/**
 * Endpoint signing secrets (contract §8): `whsec_` + base64 of 32 random bytes, shown to the user
 * once and stored only encrypted, AES-256-GCM through WebCrypto with the functions' key
 * (WEBHOOK_SECRET_KEY). Stored form: the 12-byte IV, then the ciphertext and its tag; GCM's tag
 * makes a ciphertext altered (or encrypted under another key) fail to decrypt rather than sign
 * with garbage.
 */
import { base64, decodeBase64 } from "../base64.ts";

const PREFIX = "whsec_";
const IV_BYTES = 12;

export function newWebhookSecret(): string {
  return PREFIX + base64(crypto.getRandomValues(new Uint8Array(32)));
}

/** The key Standard Webhooks signs with: the base64-decoded part after `whsec_`. */
export function signingKeyOf(secret: string): Uint8Array {
  if (!secret.startsWith(PREFIX)) throw new Error("not a whsec_ secret");
  return decodeBase64(secret.slice(PREFIX.length));
}

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
