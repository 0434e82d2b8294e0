/**
 * A reporter request costs the database one statement: the token check, the project's rate-limit
 * hit and the route's work (route.ts `statement`), composed here once per route and prepared once
 * per connection. Nested functions cost more than the work they wrapped (each PL/pgSQL statement
 * pays its own executor start, about 12 µs here; see the README's benchmark), so the hot path is a
 * plain statement; routes with branching logic (commands, approvals) call one SQL function from
 * theirs.
 */
import { ApiError } from "../_shared/errors.ts";
import type { Sql } from "../_shared/db.ts";
import { countHit, rateLimited } from "../_shared/rate_limit.ts";
import { apiErrorFromSql } from "../_shared/sql_errors.ts";
import type { Route } from "./route.ts";

export interface ReporterSettings {
  rate_limit: number;
  unauthenticated_limit: number;
  command_lease_seconds: number;
}

/** $1 project id, $2 body, $3 settings, $4 token hash: a live token of that project counts. */
const ADMISSION = `
  with hit as (${
  countHit(
    "'vm-reporter:project:' || t.project_id",
    `from private.reporter_tokens t
     where t.token_hash = $4 and t.project_id = $1 and t.revoked_at is null
       and (t.expires_at is null or t.expires_at > now())`,
  )
}),
  admitted as (select from hit where hit.hits <= ($3 ->> 'rate_limit')::integer)`;

/** Authentication and the rate limit alone (a body that failed validation still spends budget). */
const ADMISSION_ONLY = `${ADMISSION}
  select hit.hits, hit.retry_after, null::jsonb as data from hit`;

/** A request without a valid token spends the project's unauthenticated budget. */
const UNAUTHENTICATED = `
  with hit as (${countHit("'vm-reporter:unauthenticated:' || $1::text")})
  select hit.hits, hit.retry_after from hit`;

export function statementOf(route: Route): string {
  const { with: ctes, data } = route.statement;
  return `${ADMISSION}${ctes ? `,\n${ctes}` : ""}
  select hit.hits, hit.retry_after,
    case when hit.hits <= ($3 ->> 'rate_limit')::integer then ${data} end as data
  from hit`;
}

interface Admission {
  hits: number;
  retry_after: number;
  data: unknown;
}

/** `answered` is told each time the database answered (failures.ts: the end of an outage). */
export function createDispatch(sql: Sql, settings: ReporterSettings, answered: () => void) {
  const statements = new Map<Route, string>();
  const settingsJson = sql.json(settings as never);

  async function admit(
    text: string,
    projectId: string,
    tokenHash: Uint8Array,
    body: unknown,
  ): Promise<unknown> {
    const [row] = await sql.unsafe<Admission[]>(
      text,
      [projectId, sql.json((body ?? null) as never), settingsJson, tokenHash] as never[],
      { prepare: true },
    );
    answered();
    if (!row) throw await unauthenticated(projectId);
    if (row.hits > settings.rate_limit) throw rateLimited(row.retry_after);
    return row.data;
  }

  /** Spends the project's unauthenticated budget: answers `refusal` while some is left, then 429. */
  async function unauthenticated(
    projectId: string,
    refusal: ApiError = invalidToken(),
  ): Promise<ApiError> {
    const [hit] = await sql.unsafe<[{ hits: number; retry_after: number }]>(
      UNAUTHENTICATED,
      [projectId],
      { prepare: true },
    );
    if (hit.hits > settings.unauthenticated_limit) return rateLimited(hit.retry_after);
    return refusal;
  }

  return {
    /** Authenticates and spends budget only; throws the refusal, if any. */
    async authenticate(projectId: string, tokenHash: Uint8Array): Promise<void> {
      await admit(ADMISSION_ONLY, projectId, tokenHash, null);
    },

    /** Runs an admitted request's route; answers its `data` or throws the refusal. */
    async run(route: Route, projectId: string, tokenHash: Uint8Array, body: unknown) {
      let text = statements.get(route);
      if (!text) statements.set(route, text = statementOf(route));
      try {
        return await admit(text, projectId, tokenHash, body);
      } catch (error) {
        const refusal = callerError(error);
        if (!refusal) throw error;
        // The statement was undone with its rate-limit hit; the request still counts.
        await admit(ADMISSION_ONLY, projectId, tokenHash, null);
        throw refusal;
      }
    },

    /** For a bootstrap exchange that failed: spends the unauthenticated budget. */
    unauthenticated,
  };
}

export function invalidToken(): ApiError {
  return new ApiError("UNAUTHORIZED", "Missing or invalid reporter token");
}

/** A refusal the route's SQL raised for the caller's input (never for a bug or an outage). */
function callerError(error: unknown): ApiError | undefined {
  if (error instanceof ApiError) return undefined;
  const { code, constraint_name, message } = (error ?? {}) as {
    code?: string;
    constraint_name?: string;
    message?: string;
  };
  if (code?.startsWith("VA")) return apiErrorFromSql(error);
  // data_exception, integrity_constraint_violation: the message names the rule, never the SQL.
  if (code?.startsWith("22") || code?.startsWith("23")) {
    return new ApiError(
      "BAD_REQUEST",
      `The report was rejected by the database: ${
        constraint_name ? `constraint ${constraint_name}` : message
      }`,
    );
  }
  return undefined;
}
