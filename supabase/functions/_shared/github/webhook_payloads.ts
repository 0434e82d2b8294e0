/**
 * What github-webhooks reads of a delivery's payload, as GitHub's webhook documentation shapes
 * it: the installation events in full (they are acted on), and of the events about a repository
 * the repository's `full_name`. A payload without what its event must carry is of the wrong
 * shape (400, recorded as `invalid`); anything else in it is kept as it came.
 */
import { z } from "zod";

const fullName = z.string().regex(/^[^/\s]+\/[^/\s]+$/, { error: "must be owner/repo" });
const repositoryRef = z.object({ full_name: fullName });
const installationRef = z.object({ id: z.int().positive() });
const installationWithAccount = installationRef.extend({
  account: z.object({ login: z.string().min(1) }),
});

const installationEvent = z.object({
  action: z.string(),
  installation: installationWithAccount,
  repositories: z.array(repositoryRef).optional(),
});

const installationRepositoriesEvent = z.object({
  action: z.string(),
  installation: installationWithAccount,
  repositories_added: z.array(repositoryRef),
  repositories_removed: z.array(repositoryRef),
});

const repositoryEvent = z.object({
  action: z.string().optional(),
  repository: repositoryRef,
  installation: installationRef.optional(),
});

/** Events about a repository that contract §16 uses: each carries `repository`. */
export const REPOSITORY_EVENTS: ReadonlySet<string> = new Set([
  "issues",
  "issue_comment",
  "pull_request",
  "pull_request_review",
  "pull_request_review_comment",
  "check_run",
  "check_suite",
  "push",
]);

const anyEvent = z.object({
  action: z.string().optional(),
  repository: repositoryRef.optional(),
  installation: installationRef.optional(),
});

/** What the deliveries table keeps beside the payload. */
export interface DeliveryFacts {
  action: string | null;
  repository: string | null;
  installationId: number | null;
}

/** The facts of a payload of `event`, or why it is of the wrong shape. */
export function readPayload(
  event: string,
  payload: unknown,
): { ok: true; facts: DeliveryFacts } | { ok: false; problem: string } {
  const schema = event === "installation"
    ? installationEvent
    : event === "installation_repositories"
    ? installationRepositoriesEvent
    : REPOSITORY_EVENTS.has(event)
    ? repositoryEvent
    : anyEvent;
  if (typeof payload !== "object" || payload === null || Array.isArray(payload)) {
    return { ok: false, problem: "body: must be a JSON object" };
  }
  const parsed = schema.safeParse(payload);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) =>
      `${issue.path.map(String).join(".") || "body"}: ${issue.message}`
    );
    return { ok: false, problem: `${event} payload: ${problems.join("; ")}` };
  }
  const data = parsed.data as {
    action?: string;
    repository?: { full_name: string };
    installation?: { id: number };
  };
  return {
    ok: true,
    facts: {
      action: data.action ?? null,
      repository: data.repository?.full_name ?? null,
      installationId: data.installation?.id ?? null,
    },
  };
}
