/**
 * The OpenAPI 3.1 document of vm-api and vm-reporter, built from the zod schemas the functions
 * validate with (zod's JSON Schema output), so it cannot say something the code does not do.
 * `deno task openapi` writes it to docs/openapi.json.
 */
import { z } from "zod";
import type { Action } from "../functions/vm-api/action.ts";
import { actions } from "../functions/vm-api/actions.ts";
import { bootstrap } from "../functions/vm-reporter/bootstrap.ts";
import type { RouteContract } from "../functions/vm-reporter/route.ts";
import { routeList } from "../functions/vm-reporter/routes.ts";
import { failureResponses, FAILURES, type Status } from "./openapi_failures.ts";

type JsonSchema = Record<string, unknown>;
type Operation = Record<string, unknown>;

/** A zod schema as a component: JSON Schema 2020-12, the dialect OpenAPI 3.1 schemas speak. */
function jsonSchema(schema: z.ZodType, io: "input" | "output"): JsonSchema {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, {
    target: "draft-2020-12",
    io,
    // Refinements (ordered periods, unique names) have no JSON Schema form: the code checks them.
    unrepresentable: "any",
    reused: "inline",
  });
  return rest;
}

const schemaUri = (name: string) => `#/components/schemas/${name}`;
const ref = (name: string) => ({ $ref: schemaUri(name) });
const json = (schema: JsonSchema) => ({ "application/json": { schema } });

/** `{success: true, data}` around an answer. */
const success = (data: z.ZodType) => z.object({ success: z.literal(true), data });

/** "/metrics/cli-sessions" → "MetricsCliSessions". */
function pascal(path: string): string {
  return path.split(/[/_-]/).filter(Boolean).map((w) => w[0]!.toUpperCase() + w.slice(1)).join("");
}

export function openApiDocument(): JsonSchema {
  const schemas: Record<string, JsonSchema> = {
    Error: jsonSchema(FAILURES.schema, "output"),
  };

  const actionEntries = Object.entries(actions) as [string, Action][];
  const requestOf = (action: string) => `VmApi${pascal(action)}Request`;
  const responseOf = (action: string) => `VmApi${pascal(action)}Response`;
  for (const [name, action] of actionEntries) {
    schemas[requestOf(name)] = jsonSchema(action.schema, "input");
    schemas[responseOf(name)] = jsonSchema(success(action.response), "output");
  }
  const vmApi: Operation = {
    operationId: "vmApi",
    tags: ["vm-api"],
    summary: "The dashboard's VM lifecycle endpoint: `action` picks what to do",
    description: actionEntries.map(([name, action]) => `- \`${name}\`: ${action.summary}`)
      .join("\n"),
    security: [{ UserJwt: [] }],
    requestBody: {
      required: true,
      content: json({
        oneOf: actionEntries.map(([name]) => ref(requestOf(name))),
        discriminator: {
          propertyName: "action",
          mapping: Object.fromEntries(
            actionEntries.map(([name]) => [name, schemaUri(requestOf(name))]),
          ),
        },
      }),
    },
    responses: {
      200: {
        description: "The action's answer (the one its `action` names)",
        headers: { "X-Request-ID": { $ref: "#/components/headers/RequestId" } },
        content: json({
          anyOf: actionEntries.map(([name]) => ref(responseOf(name))),
        }),
      },
      ...failureResponses([400, 401, 403, 404, 405, 409, 413, 429, 500, 503]),
    },
  };

  const reporterOperation = (
    route: RouteContract,
    security: string,
    statuses: Status[],
  ): Operation => {
    const name = `Reporter${pascal(route.path)}`;
    schemas[`${name}Request`] = jsonSchema(route.schema, "input");
    schemas[`${name}Response`] = jsonSchema(success(route.response), "output");
    return {
      operationId: `reporter${name.slice("Reporter".length)}`,
      tags: ["vm-reporter"],
      summary: route.summary,
      security: [{ [security]: [], ProjectId: [] }],
      requestBody: { required: route !== bootstrap, content: json(ref(`${name}Request`)) },
      responses: {
        200: {
          description: "Accepted",
          headers: { "X-Request-ID": { $ref: "#/components/headers/RequestId" } },
          content: json(ref(`${name}Response`)),
        },
        ...failureResponses(statuses, route.refusals),
      },
    };
  };

  const paths: Record<string, { post: Operation }> = { "/vm-api": { post: vmApi } };
  paths[`/vm-reporter${bootstrap.path}`] = {
    post: reporterOperation(bootstrap, "BootstrapCredential", [400, 401, 405, 429, 500, 503]),
  };
  for (const route of routeList) {
    paths[`/vm-reporter${route.path}`] = {
      post: reporterOperation(route, "ReporterToken", [400, 401, 405, 413, 429, 500, 503]),
    };
  }

  return {
    openapi: "3.1.0",
    info: {
      title: "vm-service",
      version: "1.0.0",
      description:
        "vm-api (the dashboard's VM lifecycle) and vm-reporter (what VMs report). Generated from " +
        "the functions' zod schemas by `deno task openapi`; do not edit by hand.",
    },
    servers: [
      { url: "http://127.0.0.1:54321/functions/v1", description: "Local stack (deno task start)" },
      {
        url: "https://{project_ref}.supabase.co/functions/v1",
        description: "Hosted Supabase",
        variables: { project_ref: { default: "your-project-ref" } },
      },
    ],
    tags: [
      { name: "vm-api", description: "Called by the dashboard with a signed-in user's JWT" },
      { name: "vm-reporter", description: "Called by each project's VM with its reporter token" },
    ],
    paths,
    components: {
      schemas,
      responses: FAILURES.responses,
      headers: FAILURES.headers,
      securitySchemes: {
        UserJwt: {
          type: "http",
          scheme: "bearer",
          bearerFormat: "JWT",
          description: "A Supabase Auth access token (role authenticated, audience authenticated)",
        },
        ReporterToken: {
          type: "http",
          scheme: "bearer",
          description: "The project's reporter token (vmr_...), from /bootstrap or " +
            "`deno task reporter-token`",
        },
        BootstrapCredential: {
          type: "http",
          scheme: "bearer",
          description: "The single-use bootstrap credential (vmb_...) in the VM's boot data",
        },
        ProjectId: {
          type: "apiKey",
          in: "header",
          name: "X-Project-ID",
          description: "The project's UUID: every reporter call names the project it reports for",
        },
      },
    },
  };
}
