/**
 * One webhook POST to a customer's URL, guarded against server-side request forgery: the target's
 * name is resolved here, every address it resolves to must be public, and the connection is made
 * to those checked addresses (node:http's `lookup`), so a name that answers differently on a
 * second lookup (DNS rebinding) cannot slip through. Redirects are never followed (a 3xx is an
 * answer like any other: not delivered). `allowPrivate` (WEBHOOK_ALLOW_PRIVATE_URLS, the local
 * stack) lifts the address check and allows http.
 */
import { lookup as resolveAll } from "node:dns/promises";
import http from "node:http";
import https from "node:https";
import type { LookupFunction } from "node:net";
import { isIP } from "node:net";
import { isPublicAddress } from "./public_address.ts";

export interface PostOptions {
  allowPrivate: boolean;
  timeoutMs: number;
}

export interface PostAnswer {
  status: number;
  /** The Retry-After header in seconds, when it is one (429, 503). */
  retryAfterSeconds: number | null;
}

/** The target was refused before anything was sent; the message says why, for the deliveries log. */
export class TargetRefused extends Error {
  override readonly name = "TargetRefused";
}

/** Why a URL can never be a webhook target, or undefined when it may be (its address aside). */
export function urlProblem(url: string, allowPrivate: boolean): string | undefined {
  if (!URL.canParse(url)) return "must be an absolute URL";
  const parsed = new URL(url);
  if (parsed.protocol !== "https:" && !(allowPrivate && parsed.protocol === "http:")) {
    return allowPrivate ? "must be an http or https URL" : "must be an https URL";
  }
  if (parsed.username || parsed.password) return "must not carry credentials";
  const host = bareHost(parsed);
  if (!allowPrivate && isIP(host) && !isPublicAddress(host)) {
    return "must not point at a private, loopback or link-local address";
  }
  return undefined;
}

export function postJson(
  url: string,
  headers: Record<string, string>,
  body: string,
  options: PostOptions,
): Promise<PostAnswer> {
  const problem = urlProblem(url, options.allowPrivate);
  if (problem) return Promise.reject(new TargetRefused(`The URL ${problem}`));
  const target = new URL(url);
  const client = target.protocol === "https:" ? https : http;
  return new Promise((resolve, reject) => {
    const request = client.request(target, {
      method: "POST",
      headers: { ...headers, "content-length": String(new TextEncoder().encode(body).length) },
      lookup: options.allowPrivate ? undefined : publicOnlyLookup,
      signal: AbortSignal.timeout(options.timeoutMs),
    }, (response) => {
      // The body is not ours to read: drained so the socket is freed.
      response.resume();
      response.on("end", () =>
        resolve({
          status: response.statusCode ?? 0,
          retryAfterSeconds: retryAfter(response.headers["retry-after"]),
        }));
      response.on("error", reject);
    });
    request.on("error", (error) =>
      reject(
        error.name === "AbortError" || error.name === "TimeoutError"
          ? new Error(`No answer within ${options.timeoutMs / 1000} s`)
          : error,
      ));
    request.end(body);
  });
}

/** node:http's `lookup`, answering only the name's addresses, and only when all are public. */
const publicOnlyLookup: LookupFunction = (hostname, options, callback) => {
  resolveAll(hostname, { all: true }).then((addresses) => {
    const refused = addresses.find((a) => !isPublicAddress(a.address));
    if (refused || addresses.length === 0) {
      throw new TargetRefused(
        `The URL's host resolves to a private, loopback or link-local address`,
      );
    }
    if ((options as { all?: boolean }).all) {
      (callback as (e: null, a: typeof addresses) => void)(null, addresses);
    } else {
      callback(null, addresses[0]!.address, addresses[0]!.family);
    }
  }).catch((error) => callback(error as NodeJS.ErrnoException, "", 0));
};

function bareHost(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, "$1");
}

function retryAfter(header: string | string[] | undefined): number | null {
  const value = Array.isArray(header) ? header[0] : header;
  if (!value) return null;
  if (/^\d+$/.test(value.trim())) return Number(value.trim());
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, Math.ceil((at - Date.now()) / 1000));
}
