/**
 * GitHub's published OpenAPI description (npm `@octokit/openapi`, `generated/api.github.com.json`:
 * github.com's, the one GitHub's own SDKs are generated from) as the GitHub stand-in's tests use
 * it: every REST answer an octokit made by `checkedOctokit` receives, success or error, is
 * checked by an octokit hook: the route octokit used names the operation, the status names the
 * response, and the body must validate against that response's schema. Webhook payloads are
 * checked the same way against the description's `x-webhooks` schemas (`conformWebhook`). The
 * validator is ajv: the description is large (969 schemas, deeply nested `allOf`/`anyOf`,
 * formats such as `date-time` and `uri`) and a hand-written checker of required properties and
 * types would miss exactly what matters (a nullable field answered as a string, a `uri` that is
 * not one, an enum value GitHub never sends). The description is OpenAPI 3.0, whose
 * `nullable: true` ajv understands only beside a `type`; `asJsonSchema` rewrites the other cases
 * into `anyOf [..., null]`, which is what they mean. Errors GitHub answers without documenting
 * them for an operation (a 401 is documented for none of these) are checked against the
 * description's `basic-error`. `checked` keeps which operations and statuses were checked, for
 * the tests' coverage checks.
 */
import assert from "node:assert/strict";
import { createAppAuth } from "@octokit/auth-app";
import openapiPackage from "@octokit/openapi/package.json" with { type: "json" };
import { Octokit } from "@octokit/rest";
import { Ajv, type ValidateFunction } from "ajv";
import addFormats from "ajv-formats";
import type { GitHubStandIn } from "../../local/github/server.ts";

export { openapiPackage };

// deno-lint-ignore no-explicit-any
export type Json = any;

// The package is in the module graph through its package.json (imported above, and exported for
// the test that pins its version), so Deno has fetched it; the 13 MB description is read from
// there rather than imported, which would make the type checker infer a type for all of it.
const SPEC_URL = import.meta.resolve("@octokit/openapi/generated/api.github.com.json");
export const spec: Json = JSON.parse(await Deno.readTextFile(new URL(SPEC_URL)));

/**
 * The description made JSON Schema for ajv: OpenAPI 3.0's `nullable` without a `type` (beside
 * `allOf`, `$ref`, …) becomes what it means, `anyOf [..., null]`.
 */
function asJsonSchema(node: Json): Json {
  if (Array.isArray(node)) return node.map(asJsonSchema);
  if (!node || typeof node !== "object") return node;
  const out: Json = {};
  for (const [k, v] of Object.entries(node)) {
    out[k] = asJsonSchema(v);
  }
  if (out.nullable === true && out.type === undefined) {
    const { nullable: _, ...rest } = out;
    return { anyOf: [rest, { type: "null" }] };
  }
  return out;
}

const ajv = new Ajv({ strict: false, allErrors: true, validateSchema: false });
(addFormats as unknown as (a: Ajv) => void)(ajv);
// Formats the description uses that are labels rather than checks.
for (const format of ["uri-template", "repo.nwo", "ssh-key", "ssh-key fingerprint"]) {
  ajv.addFormat(format, true);
}
// The whole description, so that a response's inline schema is reached by its place in `paths`
// and its `#/components/…` references resolve as they do in the description.
ajv.addSchema(asJsonSchema(spec), "github");

const validators = new Map<string, ValidateFunction>();
function validatorFor(pointer: string): ValidateFunction {
  let validate = validators.get(pointer);
  if (!validate) {
    validate = ajv.compile({ $ref: `github#${pointer}` });
    validators.set(pointer, validate);
  }
  return validate;
}

export function assertSchema(pointer: string, body: unknown, what: string): void {
  const validate = validatorFor(pointer);
  if (!validate(body)) {
    const errors = (validate.errors ?? []).slice(0, 12)
      .map((e) => `  ${e.instancePath || "(body)"} ${e.message} ${JSON.stringify(e.params)}`);
    throw new assert.AssertionError({
      message: `${what} does not match GitHub's OpenAPI description (${pointer}):\n${
        errors.join("\n")
      }`,
    });
  }
}

const escapePointer = (s: string) => s.replaceAll("~", "~0").replaceAll("/", "~1");

/** The operations and statuses whose answers were checked, for the coverage test at the end. */
export const checked = new Map<string, Set<number>>();

/**
 * Checks one REST answer against the description: the operation from the route template and
 * method octokit used, the response schema from the status (the operation's own, else
 * `basic-error` for an error status it does not document).
 */
export function conform(method: string, route: string, status: number, body: unknown): void {
  const operation = spec.paths[route]?.[method.toLowerCase()];
  if (!operation) throw new Error(`No operation ${method} ${route} in GitHub's description`);
  const id: string = operation.operationId;
  checked.set(id, (checked.get(id) ?? new Set()).add(status));
  let response = operation.responses[String(status)];
  if (!response) {
    assert.ok(status >= 400, `${id} answered ${status}, which GitHub does not document`);
    assertSchema("/components/schemas/basic-error", body, `${id} ${status}`);
    return;
  }
  if (response.$ref) {
    const name = response.$ref.split("/").pop();
    response = spec.components.responses[name];
    if (!response.content) return;
    assertSchema(
      `/components/responses/${escapePointer(name)}/content/application~1json/schema`,
      body,
      `${id} ${status}`,
    );
    return;
  }
  if (!response.content) {
    // Documented without a body: a success has none; an error has GitHub's usual error body,
    // which the description leaves out (git/delete-ref's 422 `Reference does not exist`).
    if (status < 400) assert.ok(body === undefined || body === "", `${id} ${status} has a body`);
    else assertSchema("/components/schemas/basic-error", body, `${id} ${status}`);
    return;
  }
  const schema = response.content["application/json"].schema;
  const pointer = schema.$ref
    ? schema.$ref.slice(1)
    : `/paths/${
      escapePointer(route)
    }/${method.toLowerCase()}/responses/${status}/content/application~1json/schema`;
  assertSchema(pointer, body, `${id} ${status}`);
}

/** A webhook payload against the description's `x-webhooks` schema for its event and action. */
export function conformWebhook(event: string, payload: Json): void {
  const action = payload.action ? `-${String(payload.action).replaceAll("_", "-")}` : "";
  const name = `webhook-${event.replaceAll("_", "-")}${action}`;
  assert.ok(spec.components.schemas[name], `GitHub describes no webhook ${name}`);
  assertSchema(`/components/schemas/${escapePointer(name)}`, payload, `webhook ${name}`);
}

/** An octokit whose every answer (and error answer) is checked against the description. */
export function checkedOctokit(gh: GitHubStandIn, auth: Record<string, unknown> | string): Octokit {
  // Refusals are what these tests ask for: octokit need not log each one.
  const log = { debug() {}, info() {}, warn() {}, error() {} };
  const octokit = typeof auth === "string"
    ? new Octokit({ baseUrl: gh.apiUrl, auth, log })
    : new Octokit({ baseUrl: gh.apiUrl, authStrategy: createAppAuth, auth, log });
  octokit.hook.after("request", (response, options) => {
    conform(options.method, options.url, response.status, response.data);
  });
  octokit.hook.error("request", (error, options) => {
    const failure = error as { status?: number; response?: { data: unknown } };
    if (failure.response && failure.status) {
      conform(options.method, options.url, failure.status, failure.response.data);
    }
    throw error;
  });
  return octokit;
}

/** The App itself (JWT). */
export const appClient = (gh: GitHubStandIn) =>
  checkedOctokit(gh, { appId: gh.app.id, privateKey: gh.app.privateKey });

/** An installation of the App (tokens minted and refreshed by auth-app). */
export const installationClient = (gh: GitHubStandIn, installationId: number) =>
  checkedOctokit(gh, { appId: gh.app.id, privateKey: gh.app.privateKey, installationId });

/** A token narrowed to one repository, as the platform mints them for a VM. */
export async function narrowToken(
  gh: GitHubStandIn,
  installationId: number,
  repo: string,
  permissions: Record<string, "read" | "write"> = { contents: "write", pull_requests: "write" },
): Promise<string> {
  const { data } = await appClient(gh).apps.createInstallationAccessToken({
    installation_id: installationId,
    repositories: [repo],
    permissions,
  });
  return data.token;
}

export async function failure(
  promise: Promise<unknown>,
): Promise<{ status: number; data: Json; headers: Json }> {
  try {
    await promise;
  } catch (error) {
    const e = error as { status: number; response?: { data: Json; headers: Json } };
    if (!e.response) throw error;
    return { status: e.status, data: e.response.data, headers: e.response.headers };
  }
  throw new Error("expected the request to fail");
}
