/**
 * The OpenAPI 3.1 document of vm-api, webhooks, vm-reporter and approval-links, built from the contract
 * (supabase/functions/_contract/: the zod schemas the functions validate with, as JSON Schema,
 * and the error codes), so it cannot say something the code does not do. `deno task openapi`
 * writes it to docs/openapi.json.
 */
import { z } from "zod";
import type { ActionContract } from "../../../supabase/functions/_contract/actions.ts";
import {
  deliveryBody,
  EVENT_DATA,
  type EventType,
} from "../../../supabase/functions/_contract/events.ts";
import {
  bootstrap,
  REPORTER_ROUTES,
  type RouteContract,
} from "../../../supabase/functions/_contract/reporter.ts";
import { VM_API_ACTIONS } from "../../../supabase/functions/_contract/vm_api.ts";
import { WEBHOOKS_ACTIONS } from "../../../supabase/functions/_contract/webhooks.ts";
import {
  approvalLinkDecide,
  approvalLinkInfo,
} from "../../../supabase/functions/_contract/approval_links.ts";
import { failureResponses, FAILURES, type Status } from "./failures.ts";

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

  /** An endpoint of user actions (vm-api, webhooks): one POST, `action` picks the schema. */
  const actionsOperation = (
    functionName: string,
    table: Record<string, ActionContract>,
    summary: string,
  ): Operation => {
    const prefix = pascal(functionName);
    const entries = Object.entries(table);
    const requestOf = (action: string) => `${prefix}${pascal(action)}Request`;
    const responseOf = (action: string) => `${prefix}${pascal(action)}Response`;
    for (const [name, action] of entries) {
      schemas[requestOf(name)] = jsonSchema(action.request, "input");
      schemas[responseOf(name)] = jsonSchema(success(action.response), "output");
    }
    return {
      operationId: functionName.replace(/-(\w)/g, (_, c: string) => c.toUpperCase()),
      tags: [functionName],
      summary,
      description: entries.map(([name, action]) => `- \`${name}\`: ${action.summary}`).join("\n"),
      security: [{ UserJwt: [] }],
      requestBody: {
        required: true,
        content: json({
          oneOf: entries.map(([name]) => ref(requestOf(name))),
          discriminator: {
            propertyName: "action",
            mapping: Object.fromEntries(
              entries.map(([name]) => [name, schemaUri(requestOf(name))]),
            ),
          },
        }),
      },
      responses: {
        200: {
          description: "The action's answer (the one its `action` names)",
          headers: { "X-Request-ID": { $ref: "#/components/headers/RequestId" } },
          content: json({ anyOf: entries.map(([name]) => ref(responseOf(name))) }),
        },
        ...failureResponses([400, 401, 403, 404, 405, 409, 413, 429, 500, 503]),
      },
    };
  };
  const vmApi = actionsOperation(
    "vm-api",
    VM_API_ACTIONS,
    "The dashboard's VM lifecycle endpoint: `action` picks what to do",
  );
  const webhooksApi = actionsOperation(
    "webhooks",
    WEBHOOKS_ACTIONS,
    "An organization's webhook endpoints (owners and admins): `action` picks what to do",
  );

  const reporterOperation = (
    route: RouteContract,
    security: string,
    statuses: Status[],
  ): Operation => {
    const name = `Reporter${pascal(route.path)}`;
    schemas[`${name}Request`] = jsonSchema(route.request, "input");
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

  // approval-links (contract §13): the emailed link's token is the credential.
  schemas.ApprovalLinkInfoResponse = jsonSchema(success(approvalLinkInfo.response), "output");
  schemas.ApprovalLinkDecideRequest = jsonSchema(approvalLinkDecide.request, "input");
  schemas.ApprovalLinkDecideResponse = jsonSchema(success(approvalLinkDecide.response), "output");
  const linkRefusals = {
    403: "The link's person may no longer decide: no longer a member of the project",
    404: "No approval link has this token",
    410: "The approval is already decided or has expired (the sentence says which)",
  } as const;
  const approvalLinks: Record<string, Operation> = {
    get: {
      operationId: "approvalLinkInfo",
      tags: ["approval-links"],
      summary: approvalLinkInfo.summary,
      description: "What the `/approval` page shows. Decides nothing, and neither does `HEAD`: " +
        "mail scanners and link previews open links.",
      parameters: [{
        name: "token",
        in: "query",
        required: true,
        schema: { type: "string" },
        description: "The token of the emailed link (vma_...)",
      }],
      responses: {
        200: {
          description: "The approval the link names, pending",
          headers: { "X-Request-ID": { $ref: "#/components/headers/RequestId" } },
          content: json(ref("ApprovalLinkInfoResponse")),
        },
        ...failureResponses([400, 405, 429, 500, 503], linkRefusals),
      },
    },
    post: {
      operationId: "approvalLinkDecide",
      tags: ["approval-links"],
      summary: approvalLinkDecide.summary,
      requestBody: { required: true, content: json(ref("ApprovalLinkDecideRequest")) },
      responses: {
        200: {
          description: "Decided",
          headers: { "X-Request-ID": { $ref: "#/components/headers/RequestId" } },
          content: json(ref("ApprovalLinkDecideResponse")),
        },
        ...failureResponses([400, 405, 413, 429, 500, 503], linkRefusals),
      },
    },
  };

  const paths: Record<string, Record<string, Operation>> = {
    "/vm-api": { post: vmApi },
    "/webhooks": { post: webhooksApi },
    "/approval-links": approvalLinks,
  };
  paths[`/vm-reporter${bootstrap.path}`] = {
    post: reporterOperation(bootstrap, "BootstrapCredential", [400, 401, 405, 429, 500, 503]),
  };
  for (const route of REPORTER_ROUTES) {
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
        "vm-api (the dashboard's VM lifecycle), webhooks (where events are delivered), " +
        "vm-reporter (what VMs report) and approval-links (deciding from an emailed link); " +
        "`webhooks` describes what the service POSTs to a " +
        "customer's endpoint for each event (Standard Webhooks 1.0). Generated from " +
        "the contract's zod schemas by `deno task openapi`; do not edit by hand.",
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
      {
        name: "webhooks",
        description: "Called by the dashboard for an organization's owners and admins",
      },
      { name: "vm-reporter", description: "Called by each project's VM with its reporter token" },
      {
        name: "approval-links",
        description: "Called by the `/approval` page an emailed link opens; the link's token is " +
          "the credential",
      },
    ],
    paths,
    webhooks: eventWebhooks(),
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

/**
 * What the service sends (OpenAPI 3.1 `webhooks`): one entry per event type, its body, the
 * Standard Webhooks headers, and the answers that mean delivered, retried or disabled.
 */
function eventWebhooks(): Record<string, { post: Operation }> {
  const header = (description: string) => ({
    required: true,
    schema: { type: "string" },
    description,
  });
  return Object.fromEntries((Object.keys(EVENT_DATA) as EventType[]).map((type) => [type, {
    post: {
      operationId: `event${pascal(type.replace(".", "-"))}`,
      summary: `The \`${type}\` event`,
      description: "Signed per Standard Webhooks 1.0; receivers deduplicate by webhook-id.",
      parameters: [
        {
          name: "webhook-id",
          in: "header",
          ...header("The event's id: the same on every retry and replay"),
        },
        { name: "webhook-timestamp", in: "header", ...header("Unix seconds of this attempt") },
        {
          name: "webhook-signature",
          in: "header",
          ...header(
            '`v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">`, one per valid secret, ' +
              "space-separated",
          ),
        },
      ],
      requestBody: { required: true, content: json(jsonSchema(deliveryBody(type), "output")) },
      responses: {
        "2XX": { description: "Delivered (within WEBHOOK_TIMEOUT_MS, 15 s by default)" },
        "410": { description: "Gone: the endpoint is disabled at once" },
        default: {
          description:
            "Anything else (or no answer) is retried on WEBHOOK_RETRY_SCHEDULE_SECONDS, " +
            "a longer Retry-After respected",
        },
      },
    },
  }]));
}
