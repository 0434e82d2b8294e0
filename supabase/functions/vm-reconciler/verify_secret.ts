/**
 * Compares a presented bearer secret with the configured one in constant time (over their
 * SHA-256, so the length of the secret does not leak either).
 */
import { bearerCredential } from "../_shared/bearer.ts";
import { hashSecret } from "../_shared/reporter_token.ts";

export function bearerMatches(header: string | null, secret: string): boolean {
  const presented = bearerCredential(header);
  if (!presented) return false;
  const [a, b] = [hashSecret(presented), hashSecret(secret)];
  let difference = 0;
  for (let i = 0; i < a.length; i++) difference |= a[i]! ^ b[i]!;
  return difference === 0;
}
