/**
 * Every error any of our surfaces answers (the functions, the VM agent's socket) has one code from
 * this list. On the wire: `{"error": "<sentence>", "code": "<code>"}` (contract §15); the code
 * alone decides the HTTP status. SQL raises the same codes through `private.raise_error(code,
 * message)`, whose own copy of the list (`private.error_codes()`) a test holds equal to this one;
 * `docs/errors.md` is rendered from it (`deno task docs`).
 */

export interface ErrorCodeInfo {
  status: number;
  /** When it is answered, in a sentence (the answer's own `error` says what exactly). */
  when: string;
  /** What a client should do about it. */
  action: string;
}

export const ERROR_CODES = {
  invalid_request: {
    status: 400,
    when: "A field is missing or breaks its rule; the sentence names every field at fault " +
      "(`name: must not be empty`).",
    action: "Fix the named fields and send the request again; retrying it unchanged fails again.",
  },
  body_required: {
    status: 400,
    when: "The request has no body where a JSON object is required.",
    action: "Send a JSON object as the body.",
  },
  invalid_json: {
    status: 400,
    when: "The body is not valid UTF-8 JSON, or it ended before it was complete.",
    action: "Send the body as UTF-8 encoded JSON with `Content-Type: application/json`.",
  },
  missing_project_id: {
    status: 400,
    when: "A reporter call lacks the `X-Project-ID` header.",
    action: "Send the project's id in `X-Project-ID` on every reporter call.",
  },
  invalid_project_id: {
    status: 400,
    when: "`X-Project-ID` is not a UUID.",
    action: "Send the project's UUID, as the bootstrap data gives it.",
  },
  invalid_state_transition: {
    status: 400,
    when: "The project's status does not allow the action (start needs stopped; stop needs " +
      "active or running; delete needs stopped unless `force` is true).",
    action: "Read the project's status, wait for it to settle, and ask again.",
  },
  active_project_limit_reached: {
    status: 400,
    when: "Creating or starting would run more projects than the active project limit allows.",
    action: "Stop a project of the organization first (stopped projects do not count).",
  },
  budget_exceeded: {
    status: 400,
    when: "Starting the project would spend past its monthly budget: this month's model and " +
      "compute cost has reached `monthly_budget_usd` (the sentence names both amounts).",
    action: "An owner or admin raises or removes the budget (vm-api `update`); otherwise the " +
      "project can start again when the UTC month turns.",
  },
  report_rejected: {
    status: 400,
    when: "The database refused a report's values (the sentence names the rule).",
    action: "Fix the report; retrying it unchanged fails again.",
  },
  github_state_invalid: {
    status: 400,
    when: "github-oauth: the `state` GitHub sent back is forged, expired (10 minutes), was used " +
      "before, or belongs to another user; nothing was connected.",
    action: "Start again from the dashboard's Connect GitHub (vm-api `github_authorize`).",
  },
  github_code_invalid: {
    status: 400,
    when: "github-oauth: GitHub refused to exchange the `code` (expired, used, or not issued to " +
      "this App); nothing was connected.",
    action: "Start again from the dashboard's Connect GitHub (vm-api `github_authorize`).",
  },

  invalid_token: {
    status: 401,
    when: "The user's JWT is missing, malformed, wrongly signed or not meant for this service.",
    action: "Sign in again and send `Authorization: Bearer <access token>`.",
  },
  token_expired: {
    status: 401,
    when: "The user's JWT has expired.",
    action: "Refresh the session (supabase-js does it itself) and retry.",
  },
  invalid_reporter_token: {
    status: 401,
    when: "The reporter token is missing, unknown, revoked, expired or of another project.",
    action: "Use the project's current token (`deno task reporter-token` issues a new one).",
  },
  invalid_bootstrap_credential: {
    status: 401,
    when: "The VM's bootstrap credential is missing, already used or expired.",
    action: "A VM exchanges it once; a used one means the VM already has its reporter token.",
  },
  invalid_reconciler_secret: {
    status: 401,
    when: "The call to vm-reconciler lacks the right `RECONCILER_SECRET`.",
    action: "Schedule the reconciler with the secret set on the functions.",
  },
  invalid_github_signature: {
    status: 401,
    when: "A delivery to github-webhooks lacks an `X-Hub-Signature-256` made with " +
      "`GITHUB_WEBHOOK_SECRET`: nothing of it is recorded.",
    action: "Set the App's webhook secret on GitHub to the service's `GITHUB_WEBHOOK_SECRET`, " +
      "then redeliver from the App's settings.",
  },
  not_project_member: {
    status: 403,
    when: "The user is not a member of the project.",
    action: "Ask one of the project's owners for access.",
  },
  not_organization_member: {
    status: 403,
    when: "The user is not a member of the organization.",
    action: "Ask one of the organization's owners for access.",
  },
  not_organization_admin: {
    status: 403,
    when: "Only the organization's owners and admins may do this (webhook endpoints).",
    action: "Ask an owner or admin of the organization.",
  },
  not_project_admin: {
    status: 403,
    when: "Only the project's owners and admins may do this (its name, repository and secrets); " +
      "an owner or admin of its organization who is a member of the project counts as one.",
    action: "Ask an owner or admin of the project.",
  },
  approval_not_accessible: {
    status: 403,
    when: "The approval does not exist or belongs to a project the user is not a member of.",
    action: "Check the approval's id; only the project's members decide its approvals.",
  },
  github_repository_forbidden: {
    status: 403,
    when: "vm-api `create`/`update`: GitHub says the caller's connected GitHub account may not " +
      "push to the repository named (the sentence names the repository and the login).",
    action: "Ask the repository's owner for write access, or name a repository you may push to.",
  },

  unknown_route: {
    status: 404,
    when: "No route answers this path.",
    action: "Check the path against the OpenAPI document (`docs/openapi.json`).",
  },
  project_not_found: {
    status: 404,
    when: "No project has this id.",
    action: "Check the project id; a deleted project is gone with its data.",
  },
  command_not_found: {
    status: 404,
    when: "No command of this project has this id.",
    action: "Report only the ids `/commands/poll` gave this VM.",
  },
  approval_not_found: {
    status: 404,
    when: "No approval of this project has this id.",
    action: "Acknowledge only the approvals this VM asked for.",
  },
  approval_link_not_found: {
    status: 404,
    when: "No approval link has this token (approval-links): mistyped, cut short, or never sent.",
    action: "Open the approval in the dashboard, or use the whole link from the email.",
  },
  secret_not_found: {
    status: 404,
    when: "The project has no secret of this name (`delete_secret`).",
    action: "Nothing to delete: read the names in `public.project_secrets`.",
  },
  no_decision_yet: {
    status: 404,
    when: "VM agent socket: nobody has decided this approval yet.",
    action: "Ask again later, or wait with `POST /approvals?wait=<seconds>`.",
  },
  method_not_allowed: {
    status: 405,
    when: "The method is not the one the path answers (the `Allow` header says which).",
    action: "Use the method in `Allow` (POST for every function).",
  },
  body_timeout: {
    status: 408,
    when: "VM agent socket: the body did not arrive within the read deadline.",
    action: "Send the whole body at once.",
  },
  approval_already_decided: {
    status: 409,
    when: "The approval has already been approved or rejected.",
    action: "Nothing to do: each approval is decided once. Read its status.",
  },
  approval_expired: {
    status: 409,
    when: "The approval expired before it was decided.",
    action: "Nothing to decide any more; the agent is told no and may ask again.",
  },
  approval_not_decided: {
    status: 409,
    when: "An outcome is reported for an approval nobody has decided yet.",
    action: "Wait for the decision (an `approval_decision` command) before acknowledging.",
  },
  approval_outcome_conflict: {
    status: 409,
    when: "The outcome contradicts the decision or an outcome already reported.",
    action: "Report one outcome per approval, `executed` only for an approved one.",
  },
  command_already_finished: {
    status: 409,
    when: "The command already ended with another status.",
    action: "Nothing to do: a command's terminal status is reported once.",
  },
  command_not_delivered: {
    status: 409,
    when: "A status is reported for a command this VM has not polled yet.",
    action: "Poll for commands (`/commands/poll`) first.",
  },
  pull_requests_unavailable: {
    status: 409,
    when: "VM Reporter `/pull-requests`: the project does not deliver by pull request: its " +
      "repository is not on the service's GitHub, the service has no GitHub App, the App is not " +
      "installed on the repository, or the project's `delivery` is `push`.",
    action: "Push instead (the manifest's `delivery.mode`), or install the App and set " +
      "`delivery` to `pull_request`.",
  },
  github_account_required: {
    status: 409,
    when: "vm-api `create`/`update` names a GitHub repository, and the caller has no GitHub " +
      "account connected, or GitHub no longer takes its token (revoked).",
    action: "Connect GitHub (vm-api `github_authorize`, the dashboard's Connect GitHub), then " +
      "send the request again.",
  },

  approval_link_gone: {
    status: 410,
    when: "The approval link's approval is already decided or has expired (the sentence says " +
      "which): a link decides only while its approval is pending.",
    action: "Nothing to decide: read the approval's status in the dashboard.",
  },
  payload_too_large: {
    status: 413,
    when: "The body is larger than `MAX_BODY_BYTES` (it is not read past the limit).",
    action: "Send less: reporter batches hold 1 to 100 records.",
  },
  pull_request_branch_refused: {
    status: 422,
    when: "VM Reporter `/pull-requests`: the branch is not `<branch_prefix><agent>/…` of a task " +
      "the platform knows for this project and agent, or GitHub has a pull request on it that " +
      "the platform did not open.",
    action: "Do not retry: report only the branches the runner made for its own tasks.",
  },

  rate_limited: {
    status: 429,
    when: "The caller's rate limit is spent (per user for vm-api and webhooks, per project for " +
      "vm-reporter).",
    action: "Retry after the seconds the `Retry-After` header gives.",
  },
  internal_error: {
    status: 500,
    when: "A bug. The details are in the server's log under the answer's `request_id`.",
    action: "Quote the `request_id` when you contact support.",
  },
  service_unavailable: {
    status: 503,
    when: "The database cannot be reached or cannot serve right now.",
    action: "Retry after the seconds the `Retry-After` header gives.",
  },
  auth_unavailable: {
    status: 503,
    when: "User tokens cannot be verified right now (the key source is unreachable).",
    action: "Retry after the seconds the `Retry-After` header gives.",
  },
  webhooks_unavailable: {
    status: 503,
    when: "Webhook endpoints cannot be made: the service has no `WEBHOOK_SECRET_KEY`.",
    action: "An operator sets `WEBHOOK_SECRET_KEY` (docs/operations.md).",
  },
  secrets_unavailable: {
    status: 503,
    when: "Project secrets cannot be sealed or opened: the service has no `WEBHOOK_SECRET_KEY`, " +
      "the key that seals every secret at rest.",
    action: "An operator sets `WEBHOOK_SECRET_KEY` (docs/operations.md); then retry.",
  },
  github_unavailable: {
    status: 503,
    when: "github-webhooks cannot verify deliveries: the service has no `GITHUB_WEBHOOK_SECRET`.",
    action: "An operator sets the GitHub App's settings (docs/github.md); GitHub redelivers on " +
      "request from the App's settings.",
  },
  github_deferred: {
    status: 503,
    when: "GitHub's limits (a 403 or 429) or an outage (5xx) held a call to GitHub back; nothing " +
      "was lost.",
    action: "Retry after the seconds the `Retry-After` header gives (the VM agent's spool does).",
  },
  spool_full: {
    status: 507,
    when: "VM agent socket: the spool of reports waiting for the platform is full.",
    action: "Report less until the VM agent reaches the platform again.",
  },
} as const satisfies Record<string, ErrorCodeInfo>;

export type ErrorCode = keyof typeof ERROR_CODES;

/** The codes, in the list's order. */
export const ERROR_CODE_NAMES = Object.keys(ERROR_CODES) as ErrorCode[];

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === "string" && Object.hasOwn(ERROR_CODES, value);
}

export function statusOf(code: ErrorCode): number {
  return ERROR_CODES[code].status;
}

/** An error whose message is safe to show to the caller as it is. */
export class ApiError extends Error {
  override readonly name = "ApiError";
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }

  get status(): number {
    return statusOf(this.code);
  }
}

/** The body of every error answer. */
export interface ErrorBody {
  error: string;
  code: ErrorCode;
  /** On 5xx: quote it to support (it is also the X-Request-ID header). */
  request_id?: string;
}
