/**
 * docs/openapi.json is what the schemas produce (regenerate with `deno task openapi`), and it is a
 * valid OpenAPI 3.1 document that covers every action, route, status and security scheme.
 */
import assert from "node:assert/strict";
import { Validator } from "@seriousme/openapi-schema-validator";
import { OPENAPI_FILE, openApiText } from "../../scripts/openapi.ts";
import { EVENT_DATA } from "../../supabase/functions/_contract/events.ts";
import { REPORTER_ROUTES } from "../../supabase/functions/_contract/reporter.ts";
import { VM_API_ACTIONS as actions } from "../../supabase/functions/_contract/vm_api.ts";
import { WEBHOOKS_ACTIONS as webhookActions } from "../../supabase/functions/_contract/webhooks.ts";

const generated = JSON.parse(openApiText());

Deno.test("docs/openapi.json is what the contract produces (run `deno task openapi`)", async () => {
  assert.equal(await Deno.readTextFile(OPENAPI_FILE), openApiText());
});

Deno.test("the OpenAPI document validates as OpenAPI 3.1", async () => {
  const validator = new Validator();
  const result = await validator.validate(generated);
  assert.equal(validator.version, "3.1");
  assert.deepEqual(result.errors ?? [], []);
  assert.equal(result.valid, true);
});

Deno.test("the OpenAPI document covers every action, route, status and credential", () => {
  const paths = Object.keys(generated.paths);
  assert.deepEqual(paths, [
    "/vm-api",
    "/webhooks",
    "/approval-links",
    "/vm-reporter/bootstrap",
    ...REPORTER_ROUTES.map((route) => `/vm-reporter${route.path}`),
  ]);
  // approval-links: GET reads (never decides), POST decides; a dead link is 410.
  const links = generated.paths["/approval-links"];
  assert.deepEqual(Object.keys(links), ["get", "post"]);
  assert.equal(links.get.security, undefined, "the link's token is the credential");
  assert.ok(links.post.responses["410"].description.includes("decided or has expired"));
  assert.deepEqual(Object.keys(links.post.responses), [
    "200",
    "400",
    "403",
    "404",
    "405",
    "410",
    "413",
    "429",
    "500",
    "503",
  ]);
  const vmApi = generated.paths["/vm-api"].post;
  assert.deepEqual(
    Object.keys(vmApi.requestBody.content["application/json"].schema.discriminator.mapping),
    Object.keys(actions),
  );
  assert.deepEqual(Object.keys(vmApi.responses), [
    "200",
    "400",
    "401",
    "403",
    "404",
    "405",
    "409",
    "413",
    "429",
    "500",
    "503",
  ]);
  const { responses, securitySchemes, schemas } = generated.components;
  for (const name of ["RateLimited", "Unavailable"]) {
    assert.ok(responses[name].headers["Retry-After"], `${name} names Retry-After`);
  }
  assert.ok(responses.MethodNotAllowed.headers.Allow);
  assert.deepEqual(Object.keys(schemas.Error.properties), ["error", "code", "request_id"]);
  assert.deepEqual(Object.keys(securitySchemes).sort(), [
    "BootstrapCredential",
    "ProjectId",
    "ReporterToken",
    "UserJwt",
  ]);
  assert.deepEqual(generated.paths["/vm-reporter/health"].post.security, [
    { ReporterToken: [], ProjectId: [] },
  ]);
});

Deno.test("the OpenAPI document describes the webhooks function and every event's payload", () => {
  const webhooks = generated.paths["/webhooks"].post;
  assert.deepEqual(
    Object.keys(webhooks.requestBody.content["application/json"].schema.discriminator.mapping),
    Object.keys(webhookActions),
  );
  assert.deepEqual(webhooks.security, [{ UserJwt: [] }]);
  assert.deepEqual(Object.keys(generated.webhooks), Object.keys(EVENT_DATA));
  const approval = generated.webhooks["approval.requested"].post;
  assert.deepEqual(
    approval.parameters.map((p: { name: string }) => p.name),
    ["webhook-id", "webhook-timestamp", "webhook-signature"],
  );
  const body = approval.requestBody.content["application/json"].schema;
  assert.deepEqual(Object.keys(body.properties), ["type", "timestamp", "data"]);
  assert.deepEqual(body.properties.data.required.sort(), [
    "action",
    "agent",
    "approval_id",
    "description",
    "expires_at",
    "organization_id",
    "project_id",
    "risk",
  ]);
  assert.ok(approval.responses["410"]);
});
