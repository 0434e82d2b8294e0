/**
 * Compares a presented bearer secret with the configured one in constant time (over their
 * SHA-256, so the length of the secret does not leak either).
 */
export async function bearerMatches(header: string | null, secret: string): Promise<boolean> {
  const presented = /^Bearer +(\S+)$/i.exec(header?.trim() ?? "")?.[1];
  if (!presented) return false;
  const [a, b] = await Promise.all([sha256(presented), sha256(secret)]);
  let difference = 0;
  for (let i = 0; i < a.length; i++) difference |= a[i]! ^ b[i]!;
  return difference === 0;
}

async function sha256(text: string): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)));
}
