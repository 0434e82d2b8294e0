/**
 * How the REST API answers: JSON with the headers GitHub sends on every answer (a fresh
 * `x-github-request-id`, the media type and API version it served), and GitHub's error bodies:
 * `{message, documentation_url, status}` (the `status` string is what github.com adds since 2023),
 * and `Validation Failed` with its `errors` list for a 422.
 */

/** The version GitHub answers with when a client sends `X-GitHub-Api-Version: 2022-11-28`. */
const API_VERSION = "2022-11-28";

export function json(status: number, body: unknown, extra: HeadersInit = {}): Response {
  const headers = new Headers({
    "content-type": "application/json; charset=utf-8",
    "x-github-media-type": "github.v3; format=json",
    "x-github-api-version-selected": API_VERSION,
    "x-github-request-id": requestId(),
  });
  for (const [k, v] of new Headers(extra)) headers.set(k, v);
  if (status === 204 || body === undefined) {
    headers.delete("content-type");
    return new Response(null, { status, headers });
  }
  return new Response(JSON.stringify(body), { status, headers });
}

/** GitHub's error body, word for word where GitHub's wording is known. */
export function githubError(
  status: number,
  message: string,
  documentationUrl: string,
  extra: HeadersInit = {},
): Response {
  return json(
    status,
    { message, documentation_url: documentationUrl, status: String(status) },
    extra,
  );
}

/** One entry of a 422's `errors`: what GitHub says about one field of the request. */
export interface FieldError {
  resource: string;
  code: "missing_field" | "invalid" | "already_exists" | "custom" | "missing";
  field?: string;
  message?: string;
}

export function validationFailed(documentationUrl: string, errors: FieldError[]): Response {
  return json(422, {
    message: "Validation Failed",
    errors,
    documentation_url: documentationUrl,
    status: "422",
  });
}

/** Like GitHub's: hex groups naming the request (`C0DE:1A2B:…`), for support and logs. */
function requestId(): string {
  const hex = crypto.randomUUID().replaceAll("-", "").toUpperCase();
  return [hex.slice(0, 4), hex.slice(4, 8), hex.slice(8, 15), hex.slice(15, 22), hex.slice(22, 30)]
    .join(":");
}
