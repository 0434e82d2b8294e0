/**
 * Reporter requests cost the database one statement per batch: the token check, the project's
 * rate-limit hit (or, for a wrong token, its unauthenticated budget) and the route's work
 * (route.ts `statement`) for every request of the batch, composed here once per route and
 * prepared once per connection. Requests of one route that arrive while earlier batches are
 * running leave together (batcher.ts): one statement, round trip and commit for many
 * reports, where per-statement overhead was most of a report's cost (docs/benchmarks.md). A batch
 * holds each project at most once, and takes the projects' rate-limit rows in key order before
 * anything else of theirs, so concurrent batches cannot deadlock on them.
 */
import { createBatcher } from "./batcher.ts";
import { ApiError } from "../_contract/errors.ts";
import type { Sql } from "../_shared/db.ts";
import type { Logger } from "../_shared/log.ts";
import { countHit, rateLimited } from "../_shared/rate_limit.ts";
import { apiErrorFromSql, isUnavailability } from "../_shared/sql_errors.ts";
import type { RouteStatement } from "./route.ts";

export interface ReporterSettings {
  rate_limit: number;
  unauthenticated_limit: number;
  command_lease_seconds: number;
}

/** Batches of one route running at once; requests beyond them wait for the next batch. */
const MAX_IN_FLIGHT = 2;
/** Requests per batch: bounds one statement's parameter and its time holding row locks. */
const MAX_BATCH = 64;

/**
 * `$1`: the batch, a JSON array of `{project_id, token_hash (hex), body}`; `$2`: the settings.
 * One row per request: `ord` (its place in the batch, from 1), `valid` (its token), `hits` and
 * `retry_after` of the budget it spent, and `data` when it was admitted.
 */
export function statementOf(route: RouteStatement): string {
  return `
  with authed as (
    select r.ord::integer as ord, (r.value ->> 'project_id')::uuid as project_id, r.value -> 'body' as body,
           token.valid is not null as valid,
           case when token.valid then 'vm-reporter:project:' else 'vm-reporter:unauthenticated:' end
             || (r.value ->> 'project_id') as key
    from jsonb_array_elements($1) with ordinality as r (value, ord)
    -- LATERAL with LIMIT: an index probe per request, whatever the batch size is estimated at.
    left join lateral (
      select true as valid from private.reporter_tokens t
      where t.token_hash = decode(r.value ->> 'token_hash', 'hex')
        and t.project_id = (r.value ->> 'project_id')::uuid
        and t.revoked_at is null and (t.expires_at is null or t.expires_at > now())
      limit 1
    ) token on true
  ),
  hit as (${countHit("a.key", "from authed a order by a.key")}),
  admitted as (
    select a.ord, a.project_id, a.body from authed a join hit using (key)
    where a.valid and hit.hits <= ($2 ->> 'rate_limit')::integer
  ),${route.with ? `\n${route.with},` : ""}
  answered as materialized (select a.ord, ${route.data} as data from admitted a)
  select a.ord, a.valid, hit.hits, hit.retry_after,
    (select answered.data from answered where answered.ord = a.ord) as data
  from authed a join hit using (key)`;
}

/** Authentication and the rate limit alone (a body that failed validation still spends budget). */
const ADMISSION_ONLY: RouteStatement = { data: "null::jsonb" };

interface BatchItem {
  projectId: string;
  tokenHash: string;
  body: unknown;
}

interface Outcome {
  ord: number;
  valid: boolean;
  hits: number;
  retry_after: number;
  data: unknown;
}

/** A bootstrap exchange that failed spends the unauthenticated budget on its own statement. */
const UNAUTHENTICATED = `
  with hit as (${countHit("'vm-reporter:unauthenticated:' || $1::text")})
  select hit.hits, hit.retry_after from hit`;

/** `answered` is told each time the database answered (failures.ts: the end of an outage). */
export function createDispatch(
  sql: Sql,
  settings: ReporterSettings,
  /** A batch running longer than this frees its slot (the requests in it have timed out). */
  deadlineMs: number,
  log: Logger,
  answered: () => void,
) {
  const settingsJson = sql.json(settings as never);
  const batchers = new Map<RouteStatement, (item: BatchItem) => Promise<Outcome>>();

  async function execute(text: string, requests: BatchItem[]): Promise<Outcome[]> {
    const rows = await sql.unsafe<Outcome[]>(text, [
      sql.json(requests.map((r) => ({
        project_id: r.projectId,
        token_hash: r.tokenHash,
        body: r.body ?? null,
      })) as never),
      settingsJson,
    ] as never[], { prepare: true });
    answered();
    if (requests.length > 1) log.debug("vm-reporter batch", { size: requests.length });
    const byOrd = new Map(rows.map((row) => [row.ord, row]));
    return requests.map((_, i) => byOrd.get(i + 1)!);
  }

  function batcherOf(statement: RouteStatement) {
    let submit = batchers.get(statement);
    if (!submit) {
      const text = statementOf(statement);
      submit = createBatcher<BatchItem, Outcome>({
        maxInFlight: MAX_IN_FLIGHT,
        maxSize: MAX_BATCH,
        releaseAfterMs: deadlineMs,
        key: (request) => request.projectId,
        run: async (requests) => {
          try {
            return (await execute(text, requests)).map((value) => ({ status: "fulfilled", value }));
          } catch (error) {
            if (requests.length === 1 || isUnavailability(error)) throw error;
            // One request's failure (a constraint, a deadlock) undid the whole batch: each
            // request runs alone, so that failure is its own.
            log.debug("vm-reporter batch failed: its requests run alone", {
              size: requests.length,
              code: (error as { code?: unknown } | null)?.code,
            });
            return Promise.allSettled(requests.map(async (r) => (await execute(text, [r]))[0]!));
          }
        },
      });
      batchers.set(statement, submit);
    }
    return submit;
  }

  /** Answers an admitted request's `data`, or throws its refusal. */
  async function admit(statement: RouteStatement, request: BatchItem): Promise<unknown> {
    const outcome = await batcherOf(statement)(request);
    if (!outcome.valid) {
      throw outcome.hits > settings.unauthenticated_limit
        ? rateLimited(outcome.retry_after)
        : invalidToken();
    }
    if (outcome.hits > settings.rate_limit) throw rateLimited(outcome.retry_after);
    return outcome.data;
  }

  return {
    /** Authenticates and spends budget only; throws the refusal, if any. */
    async authenticate(projectId: string, tokenHash: string): Promise<void> {
      await admit(ADMISSION_ONLY, { projectId, tokenHash, body: null });
    },

    /** Runs an admitted request's route; answers its `data` or throws the refusal. */
    async run(statement: RouteStatement, projectId: string, tokenHash: string, body: unknown) {
      try {
        return await admit(statement, { projectId, tokenHash, body });
      } catch (error) {
        const refusal = callerError(error);
        if (!refusal) throw error;
        // The statement was undone with its rate-limit hit; the request still counts.
        await admit(ADMISSION_ONLY, { projectId, tokenHash, body: null });
        throw refusal;
      }
    },

    /** Spends the project's unauthenticated budget: answers `refusal` while some is left, then 429. */
    async unauthenticated(projectId: string, refusal: ApiError): Promise<ApiError> {
      const [hit] = await sql.unsafe<[{ hits: number; retry_after: number }]>(
        UNAUTHENTICATED,
        [projectId],
        { prepare: true },
      );
      if (hit.hits > settings.unauthenticated_limit) return rateLimited(hit.retry_after);
      return refusal;
    },
  };
}

export function invalidToken(): ApiError {
  return new ApiError("invalid_reporter_token", "Missing or invalid reporter token");
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
      "report_rejected",
      `The report was rejected by the database: ${
        constraint_name ? `constraint ${constraint_name}` : message
      }`,
    );
  }
  return undefined;
}
