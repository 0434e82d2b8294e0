/**
 * POST /vm-reporter/bootstrap: a VM's first call. It presents the single-use bootstrap
 * credential from its boot data (`Authorization: Bearer vmb_...`) and gets its reporter token,
 * shown this once. The credential is spent by the exchange; a wrong, used or expired one is a
 * 401 that spends the project's unauthenticated budget, like a wrong token.
 */
import type { z } from "zod";
import { ApiError } from "../_contract/errors.ts";
import type { bootstrap } from "../_contract/reporter.ts";
import type { Sql } from "../_shared/db.ts";
import {
  hashSecret,
  looksLikeBootstrapCredential,
  newReporterToken,
} from "../_shared/reporter_token.ts";

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
  return new ApiError(
    "invalid_bootstrap_credential",
    "Missing, used or expired bootstrap credential",
  );
}
