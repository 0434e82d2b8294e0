/**
 * Where a test sends its requests: a server in a subprocess (`server.ts`, over a socket) or the
 * functions in the test's own process (`in_process.ts`, no socket). Helpers that call vm-api or
 * vm-reporter take either.
 */
export interface Endpoint {
  /** e.g. http://127.0.0.1:40123 */
  origin: string;
  functionUrl(name: string): string;
  fetch(request: Request): Promise<Response>;
}
