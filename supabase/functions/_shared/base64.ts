/**
 * Base64 (RFC 4648 §4) and its URL-safe form without padding (§5, as JWTs and our secrets spell
 * it), of bytes or of a string's UTF-8. `btoa` takes one character per byte, so a string is
 * encoded to UTF-8 first (`btoa` throws on anything past Latin-1). Built on `btoa` rather than
 * `Uint8Array.prototype.toBase64`, which is newer than some Deno runtimes these functions run on.
 */
export function base64(data: Uint8Array | string): string {
  const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}

export function base64url(data: Uint8Array | string): string {
  return base64(data).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

/** The bytes of standard base64 text; throws on anything that is not base64. */
export function decodeBase64(text: string): Uint8Array {
  const binary = atob(text);
  return Uint8Array.from(binary, (c) => c.charCodeAt(0));
}
