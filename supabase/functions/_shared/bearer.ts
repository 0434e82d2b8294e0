/**
 * The credential of an `Authorization: Bearer <credential>` header, whatever it is (user JWT,
 * reporter token, bootstrap credential, reconciler secret); undefined when there is none.
 * The scheme is case-insensitive and surrounding spaces are ignored, as RFC 9110 allows.
 */
const BEARER = /^Bearer +(\S+)$/i;

export function bearerCredential(header: string | null | undefined): string | undefined {
  return BEARER.exec(header?.trim() ?? "")?.[1];
}
