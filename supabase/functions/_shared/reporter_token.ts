/**
 * Reporter tokens: 256 random bits behind a recognisable prefix (so leaked tokens are easy to
 * spot in a scanner), stored and looked up only as their SHA-256.
 */
const PREFIX = "vmr_";

export interface ReporterToken {
  plaintext: string;
  hash: Uint8Array;
}

export async function newReporterToken(): Promise<ReporterToken> {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  const plaintext = PREFIX + base64url(bytes);
  return { plaintext, hash: await hashReporterToken(plaintext) };
}

export async function hashReporterToken(plaintext: string): Promise<Uint8Array> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(plaintext));
  return new Uint8Array(digest);
}

export function looksLikeReporterToken(value: string): boolean {
  return /^vmr_[A-Za-z0-9_-]{43}$/.test(value);
}

function base64url(bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes)).replaceAll("+", "-").replaceAll("/", "_")
    .replace(/=+$/, "");
}
