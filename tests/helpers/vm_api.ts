/** Calls vm-api on a test server the way the dashboard does, and reads the answer. */
import { type MintOptions, mintUserJwt } from "../../scripts/lib/jwt.ts";
import type { Endpoint } from "./endpoint.ts";

export interface ApiAnswer {
  status: number;
  headers: Headers;
  body: Record<string, unknown>;
}

export interface CallOptions {
  /** A ready-made Authorization header value; default: a fresh valid token for `userId`. */
  authorization?: string | null;
  method?: string;
  origin?: string;
  headers?: Record<string, string>;
  /** Raw body instead of JSON.stringify(body). */
  rawBody?: BodyInit;
}

export function vmApi(endpoint: Endpoint) {
  const url = endpoint.functionUrl("vm-api");
  return {
    url,
    async call(
      userId: string | null,
      body: unknown,
      options: CallOptions = {},
    ): Promise<ApiAnswer> {
      const headers: Record<string, string> = {
        "content-type": "application/json",
        ...(options.origin ? { origin: options.origin } : {}),
        ...options.headers,
      };
      const authorization = options.authorization !== undefined
        ? options.authorization
        : userId
        ? `Bearer ${await mintUserJwt(userId)}`
        : null;
      if (authorization) headers.authorization = authorization;
      const method = options.method ?? "POST";
      const response = await endpoint.fetch(
        new Request(url, {
          method,
          headers,
          ...(method === "GET" || method === "HEAD"
            ? {}
            : { body: options.rawBody ?? JSON.stringify(body) }),
        }),
      );
      const text = await response.text();
      return {
        status: response.status,
        headers: response.headers,
        body: text ? JSON.parse(text) : {},
      };
    },
  };
}

export const token = (userId: string, options?: MintOptions) => mintUserJwt(userId, options);

/** Polls `check` until it returns a value (not undefined) or the time is up. */
export async function eventually<T>(
  check: () => Promise<T | undefined>,
  { timeoutMs = 15_000, intervalMs = 100 } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
