/**
 * The VM's secrets: 256 random bits behind a recognisable prefix (so a leaked one is easy to
 * spot in a scanner), stored and looked up only as their SHA-256.
 *
 * - reporter tokens (`vmr_`): what a VM presents on every reporter call;
 * - bootstrap credentials (`vmb_`): what a VM's boot data carries, exchanged once for a token.
 */
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

export async function hashSecret(plaintext: string): Promise<Uint8Array> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(plaintext));
  return new Uint8Array(digest);
}

async function newSecret(prefix: string): Promise<Secret> {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  const plaintext = prefix + base64url(bytes);
  return { plaintext, hash: await hashSecret(plaintext) };
}

function base64url(bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes)).replaceAll("+", "-").replaceAll("/", "_")
    .replace(/=+$/, "");
}
