/**
 * POST /vm-reporter/bootstrap: a VM's first call. It presents the single-use bootstrap
 * credential from its boot data (`Authorization: Bearer vmb_...`) and gets its reporter token,
 * shown this once. The credential is spent by the exchange; a wrong, used or expired one is a
 * 401 that spends the project's unauthenticated budget, like a wrong token.
 */
import { ApiError } from "../_shared/errors.ts";
import type { Sql } from "../_shared/db.ts";
import {
  hashSecret,
  looksLikeBootstrapCredential,
  newReporterToken,
} from "../_shared/reporter_token.ts";
import { errorOfAnswer, type SqlAnswer } from "./sql_answer.ts";

export const BOOTSTRAP_ROUTE = "/bootstrap";

export async function exchangeBootstrapCredential(
  sql: Sql,
  settings: unknown,
  projectId: string,
  presented: string | undefined,
): Promise<{ project_id: string; reporter_token: string }> {
  if (!presented || !looksLikeBootstrapCredential(presented)) {
    throw new ApiError("UNAUTHORIZED", "Missing, used or expired bootstrap credential");
  }
  const token = await newReporterToken();
  const [row] = await sql<[{ answer: SqlAnswer }]>`
    select private.exchange_bootstrap_credential(
      ${projectId}, ${hashSecret(presented)}, ${token.hash}, ${settings as never}
    ) as answer`;
  if (row.answer.status !== 200) throw errorOfAnswer(row.answer);
  return { project_id: projectId, reporter_token: token.plaintext };
}
