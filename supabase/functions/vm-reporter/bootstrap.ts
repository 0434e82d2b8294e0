/**
 * POST /vm-reporter/bootstrap: a VM's first call. It presents the single-use bootstrap
 * credential from its boot data (`Authorization: Bearer vmb_...`) and gets its reporter token,
 * shown this once. The credential is spent by the exchange; a wrong, used or expired one is a
 * 401 that spends the project's unauthenticated budget, like a wrong token.
 */
import { z } from "zod";
import { ApiError } from "../_shared/errors.ts";
import type { Sql } from "../_shared/db.ts";
import {
  hashSecret,
  looksLikeBootstrapCredential,
  newReporterToken,
} from "../_shared/reporter_token.ts";
import { uuid } from "./fields.ts";
import type { RouteContract } from "./route.ts";

export const BOOTSTRAP_ROUTE = "/bootstrap";

/**
 * Declared like a route for clients and the OpenAPI document, but answered by the exchange below
 * rather than by a route statement (dispatch.ts): it authenticates with another credential.
 */
export const bootstrap = {
  path: BOOTSTRAP_ROUTE,
  summary: "Exchanges the VM's single-use bootstrap credential for its reporter token.",
  // The body is not read: the credential in Authorization is the whole request.
  schema: z.object({}),
  response: z.object({
    project_id: uuid,
    reporter_token: z.string().describe("Shown this once; stored only as a hash"),
  }),
} satisfies RouteContract;

/**
 * `spendUnauthenticated` spends the project's unauthenticated budget and answers the refusal to
 * throw (a 429 once the budget is spent), as for a wrong reporter token.
 */
export async function exchangeBootstrapCredential(
  sql: Sql,
  projectId: string,
  presented: string | undefined,
  spendUnauthenticated: (projectId: string, refusal: ApiError) => Promise<ApiError>,
): Promise<z.output<typeof bootstrap.response>> {
  if (!presented || !looksLikeBootstrapCredential(presented)) throw refused();
  const token = await newReporterToken();
  const [row] = await sql<[{ exchanged: boolean }]>`
    select private.exchange_bootstrap_credential(
      ${projectId}, ${hashSecret(presented)}, ${token.hash}
    ) as exchanged`;
  if (!row.exchanged) throw await spendUnauthenticated(projectId, refused());
  return { project_id: projectId, reporter_token: token.plaintext };
}

function refused(): ApiError {
  return new ApiError("UNAUTHORIZED", "Missing, used or expired bootstrap credential");
}
