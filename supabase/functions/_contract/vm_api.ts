/**
 * vm-api's actions as the dashboard sees them (specification "VM API", contract §4, §10): per
 * action its request and the `data` of its success. `VmApiRequest<"stop">` is what `{action: "stop",
 * ...}` may hold, `VmApiResponse<"stop">` the `data` it answers.
 */
import { z } from "zod";
import { action, actionRequest, type RequestOf, type ResponseOf } from "./actions.ts";
import { DEFAULT_REGION, DEFAULT_VM_SIZE } from "./defaults.ts";
import {
  healthStatus,
  projectId,
  projectStatus,
  repositoryBranch,
  repositoryUrl,
  secretName,
  secretValue,
  uuid,
} from "./fields.ts";

/** create, start, stop and delete: the project and the status the request moved it to. */
const transitionAnswer = z.object({ project_id: z.uuid(), status: projectStatus });

const projectName = z.string({ error: "must be a string" }).trim()
  .min(1, { error: "must not be empty" })
  .max(100, { error: "must be at most 100 characters" });

export const create = action({
  summary: "Creates a project and provisions its VM (status provisioning).",
  request: z.object({
    action: z.literal("create"),
    organization_id: uuid,
    name: projectName,
    region: z.string({ error: "must be a string" })
      .regex(/^[a-z][a-z0-9]{1,63}$/, { error: `must be a region name such as ${DEFAULT_REGION}` })
      .default(DEFAULT_REGION),
    vm_size: z.string({ error: "must be a string" })
      .regex(/^[A-Za-z][A-Za-z0-9_]{1,63}$/, {
        error: `must be a VM size such as ${DEFAULT_VM_SIZE}`,
      })
      .default(DEFAULT_VM_SIZE),
    repository_url: repositoryUrl.nullish().describe(
      "The repository the agents work on; https or SSH (the local stack also takes file:// URLs " +
        "and absolute paths), never with a credential in it (set the secret GIT_TOKEN)",
    ),
    repository_branch: repositoryBranch.nullish().describe("The branch they track (default main)"),
  }),
  response: transitionAnswer,
});

export const start = action({
  summary: "Starts a stopped project's VM (status starting).",
  request: z.object({ action: z.literal("start"), project_id: projectId }),
  response: transitionAnswer,
});

export const stop = action({
  summary: "Stops (deallocates) a project's VM (status stopping).",
  request: z.object({ action: z.literal("stop"), project_id: projectId }),
  response: transitionAnswer,
});

export const deleteProject = action({
  summary:
    "Deletes a project's VM and everything it holds (status deleting); force deletes from any status.",
  request: z.object({
    action: z.literal("delete"),
    project_id: projectId,
    force: z.boolean({ error: "must be true or false" }).default(false),
  }),
  response: transitionAnswer,
});

const at = z.iso.datetime({ offset: true });

// --- Cost control (contract §12) ----------------------------------------------------------------

/** `{timezone, start, stop}`; vm-api checks the zone and the cron expressions themselves. */
const schedule = z.object({
  timezone: z.string({ error: "must be an IANA time zone name such as Europe/Paris" })
    .min(1, { error: "must not be empty" })
    .max(64, { error: "must be at most 64 characters" })
    .describe("IANA time zone the expressions are read in, daylight saving included"),
  start: z.string({ error: "must be a 5-field cron expression or null" })
    .max(200, { error: "must be at most 200 characters" }).nullable().default(null)
    .describe('5-field cron expression (e.g. "0 9 * * 1-5") at which a stopped project starts'),
  stop: z.string({ error: "must be a 5-field cron expression or null" })
    .max(200, { error: "must be at most 200 characters" }).nullable().default(null)
    .describe('5-field cron expression (e.g. "0 17 * * 1-5") at which a running project stops'),
}, { error: "must be an object {timezone, start, stop} or null" });

const idleStopMinutes = z.int({ error: "must be a whole number of minutes, or null for never" })
  .min(1, { error: "must be between 1 and 10080 (a week), or null for never" })
  .max(10080, { error: "must be between 1 and 10080 (a week), or null for never" });

const monthlyBudgetUsd = z.number({ error: "must be an amount in US dollars, or null for no cap" })
  .positive({ error: "must be more than 0, or null for no cap" })
  .max(1_000_000, { error: "must be at most 1000000" })
  .refine((usd) => Math.abs(usd * 100 - Math.round(usd * 100)) < 1e-6, {
    error: "must be in whole cents (e.g. 25 or 12.50)",
  });

const budgetAlertPercent = z.int({ error: "must be a whole percentage between 1 and 99" })
  .min(1, { error: "must be between 1 and 99" })
  .max(99, { error: "must be between 1 and 99" });

export const LAST_STOP_REASONS = ["user", "idle", "schedule", "budget"] as const;

// --- Pull requests on GitHub (contract §16) ------------------------------------------------------

export const DELIVERY_MODES = ["pull_request", "push"] as const;

const delivery = z.enum(DELIVERY_MODES, { error: "must be pull_request or push" });

const agentsLabel = z.string({ error: "must be a string" })
  .min(1, { error: "must not be empty" })
  .max(50, { error: "must be at most 50 characters (GitHub's limit for a label)" })
  .refine((label) => label === label.trim() && !/[\p{Cc}]/u.test(label), {
    error: "must not start or end with spaces or hold control characters",
  });

const branchPrefix = z.string({ error: "must be a string" })
  .min(1, { error: "must not be empty" })
  .max(100, { error: "must be at most 100 characters" })
  .refine(
    (prefix) =>
      /^[A-Za-z0-9][A-Za-z0-9._/-]*$/.test(prefix) &&
      !/\.\.|\/\/|\/\.|\.lock(\/|$)|\.$/.test(prefix),
    {
      error: "must start with a letter or digit and hold only letters, digits, . _ / and -, " +
        "without .., //, /. , .lock or a final . (e.g. agents/)",
    },
  );

const ciFixRounds = z.int({ error: "must be a whole number between 0 and 20" })
  .min(0, { error: "must be between 0 and 20" })
  .max(20, { error: "must be between 0 and 20" });

const reviewRounds = z.int({ error: "must be a whole number between 0 and 10" })
  .min(0, { error: "must be between 0 and 10" })
  .max(10, { error: "must be between 0 and 10" });

/** A GitHub login: letters, digits and single inner hyphens, at most 39 characters. */
export const GITHUB_LOGIN = /^[A-Za-z0-9](?:-?[A-Za-z0-9])*$/;

const reviewers = z.array(
  z.string({ error: "must be a GitHub login" }).max(39, { error: "must be a GitHub login" })
    .regex(GITHUB_LOGIN, { error: "must be a GitHub login" }),
  { error: "must be an array of GitHub logins" },
).max(15, { error: "must hold at most 15 GitHub logins" })
  .refine((logins) => new Set(logins.map((l) => l.toLowerCase())).size === logins.length, {
    error: "must not name a login twice",
  });

/** A Debian package name (contract §20), as the runner hands it to apt. */
export const DEBIAN_PACKAGE_NAME = /^[a-z0-9][a-z0-9+.-]{0,63}$/;
export const SYSTEM_PACKAGES_MAX = 50;
export const CHECK_COMMAND_MAX = 2000;

const systemPackages = z.array(z.string({ error: "must be an array of package names" }), {
  error: "must be an array of Debian package names",
}).max(SYSTEM_PACKAGES_MAX, { error: `must name at most ${SYSTEM_PACKAGES_MAX} packages` })
  .superRefine((names, ctx) => {
    for (const name of names) {
      if (DEBIAN_PACKAGE_NAME.test(name)) continue;
      ctx.addIssue({
        code: "custom",
        message: `${JSON.stringify(name.slice(0, 80))} is not a Debian package name (1 to 64 ` +
          "lower case letters, digits, +, - and ., starting with a letter or digit)",
      });
    }
  });

const checkCommand = z.string({ error: "must be a string, or null for none" }).trim()
  .min(1, { error: "must not be empty: null clears it" })
  .max(CHECK_COMMAND_MAX, { error: `must be at most ${CHECK_COMMAND_MAX} characters` });

/** The Project resource, as status and update answer it. */
const project = z.object({
  id: z.uuid(),
  organization_id: z.uuid(),
  name: z.string(),
  status: projectStatus,
  health_status: healthStatus,
  region: z.string(),
  vm_size: z.string(),
  repository_url: z.string().nullable(),
  repository_branch: z.string(),
  created_at: at,
  updated_at: at,
  status_changed_at: at,
  last_error: z.string().nullable(),
  stuck: z.boolean().describe("In a transitional status for longer than STUCK_AFTER_SECONDS"),
  idle_stop_minutes: z.int().nullable()
    .describe("Stopped after this many minutes without activity; null: never"),
  schedule: schedule.nullable().describe("When the platform starts and stops it; null: never"),
  next_scheduled_start_at: at.nullable().describe("The schedule's next start (UTC)"),
  next_scheduled_stop_at: at.nullable().describe("The schedule's next stop (UTC)"),
  monthly_budget_usd: z.number().nullable().describe("Monthly cost cap; null: none"),
  budget_alert_percent: z.int().describe("budget.threshold_reached at this share of the budget"),
  last_stop_reason: z.enum(LAST_STOP_REASONS).nullable()
    .describe("Why it was last stopped (null: never stopped since this was recorded)"),
  delivery: delivery.describe(
    "How the agents' work reaches the repository: pull_request (a GitHub project with the " +
      "service's GitHub App; the default there) or push (every other repository)",
  ),
  draft_pull_requests: z.boolean().describe("Pull requests are opened as drafts"),
  agents_label: z.string().describe("An issue with this label is a task for the agents"),
  branch_prefix: z.string().describe("Each task's branch is <branch_prefix><agent>/<slug>-<hex>"),
  ci_fix_rounds: z.int().describe("Follow-ups for failed checks per pull request at most"),
  review_rounds: z.int().describe(
    "Team reviews per pull request at most (contract §21); 0: the team does not review",
  ),
  reviewers: z.array(z.string()).describe(
    "GitHub logins asked to review once the team is done with a pull request",
  ),
  system_packages: z.array(z.string()).describe(
    "Debian packages the runner installs once per VM, as root, before setup (contract §20)",
  ),
  check_command: z.string().nullable().describe(
    "How the project proves a change, run after every session that leaves commits; null: " +
      "the repository's .agents/check.sh, if any (contract §20)",
  ),
  month_to_date_cost_usd: z.number().describe("This UTC month's model and compute cost"),
  month_to_date: z.object({
    month: z.string().describe("The UTC month, YYYY-MM"),
    model_usd: z.number().describe("CLI sessions started this month"),
    compute_usd: z.number().describe("Hours not stopped this month × vm_usd_per_hour"),
    compute_hours: z.number(),
    vm_usd_per_hour: z.number().nullable()
      .describe("public.vm_prices for its vm_size and region; null: no price, compute counts 0"),
    note: z.string().optional().describe("Only when no price is known: says compute counts 0"),
  }).describe("month_to_date_cost_usd, model and compute apart"),
});

/** status's `project.github` (contract §16). */
const projectGitHub = z.object({
  owner: z.string(),
  repo: z.string(),
  installed: z.boolean().describe("The service's GitHub App is installed on the repository"),
  install_url: z.string().describe(
    "Where a person installs the App: `${GITHUB_WEB_URL}/apps/<slug>/installations/new`",
  ),
  verified: z.boolean().describe(
    "A person proved, with their GitHub account, that they may push to the repository the " +
      "project names now (contract §18): only then does the project get a token, issues and " +
      "pull requests",
  ),
  verified_by: z.string().nullable().describe("The GitHub login that proved it"),
  verified_at: z.string().nullable().describe("When, ISO 8601 UTC"),
  unverified_reason: z.string().nullable().describe(
    "Why the project is not verified, and what to do (null when it is)",
  ),
}).nullable().describe(
  "null unless the repository is `${GITHUB_WEB_URL}/<owner>/<repo>` and the service has a " +
    "GitHub App",
);

export const status = action({
  summary: "The project, whether it is stuck, and its five latest activities.",
  request: z.object({ action: z.literal("status"), project_id: projectId }),
  response: z.object({
    project: project.extend({ github: projectGitHub }),
    recent_activity: z.array(z.object({
      action: z.string(),
      details: z.record(z.string(), z.unknown()),
      created_at: at,
    })).describe("The five latest, newest first"),
    message: z.string().optional().describe("Only when stuck: what to do (contact support)"),
  }),
});

export const update = action({
  summary: "Renames the project, changes its repository, its cost control (idle stop, " +
    "schedule, monthly budget), its pull request settings or its environment (system_packages, " +
    "check_command) (owners and admins); answers the project as status does. A change of the " +
    "repository, the delivery or the environment is sent to the VM (update_manifest).",
  request: z.object({
    action: z.literal("update"),
    project_id: projectId,
    name: projectName.optional(),
    repository_url: repositoryUrl.nullable().optional().describe("null: no repository"),
    repository_branch: repositoryBranch.optional(),
    idle_stop_minutes: idleStopMinutes.nullable().optional()
      .describe("1..10080; null: never stopped for idleness (default 60)"),
    schedule: schedule.nullable().optional().describe("null: no schedule"),
    monthly_budget_usd: monthlyBudgetUsd.nullable().optional().describe("null: no cap"),
    budget_alert_percent: budgetAlertPercent.optional().describe("1..99 (default 80)"),
    delivery: delivery.optional().describe(
      "pull_request (default for a GitHub project; refused for any other repository) or push",
    ),
    draft_pull_requests: z.boolean({ error: "must be true or false" }).optional()
      .describe("Open pull requests as drafts (default false)"),
    agents_label: agentsLabel.optional().describe("Default agents"),
    branch_prefix: branchPrefix.optional().describe("Default agents/"),
    ci_fix_rounds: ciFixRounds.optional().describe("0..20 (default 3)"),
    review_rounds: reviewRounds.optional().describe(
      "0..10 (default 2): team reviews per pull request; 0 turns the team's reviewing off",
    ),
    reviewers: reviewers.optional().describe(
      "At most 15 GitHub logins asked to review once the team approved or ran out of rounds " +
        "(default none)",
    ),
    system_packages: systemPackages.optional().describe(
      `Debian package names, at most ${SYSTEM_PACKAGES_MAX} (default none)`,
    ),
    check_command: checkCommand.nullable().optional().describe(
      "A shell command; null: the repository's .agents/check.sh (the default)",
    ),
  }),
  response: z.object({ project }),
});

/** set_secret and delete_secret: the project and the secret's name, never its value. */
const secretAnswer = z.object({ project_id: z.uuid(), name: z.string() });

export const setSecret = action({
  summary: "Sets or replaces a project secret (owners and admins). The value is sealed before it " +
    "is stored, never answered, and reaches only the project's VM (its manifest).",
  request: z.object({
    action: z.literal("set_secret"),
    project_id: projectId,
    name: secretName,
    value: secretValue,
  }),
  response: secretAnswer,
});

export const deleteSecret = action({
  summary: "Deletes a project secret (owners and admins); 404 when the project has none of " +
    "that name.",
  request: z.object({
    action: z.literal("delete_secret"),
    project_id: projectId,
    name: secretName,
  }),
  response: secretAnswer,
});

export const githubAuthorize = action({
  summary: "Where to send the signed-in person to connect their GitHub account (contract §18): " +
    "GitHub's authorize page for the App, with a state made for this user (10 minutes, once).",
  request: z.object({ action: z.literal("github_authorize") }),
  response: z.object({
    url: z.string().describe("GitHub's authorize page; open it in the browser"),
  }),
});

export const githubDisconnect = action({
  summary: "Forgets the signed-in person's GitHub account and its tokens (contract §18).",
  request: z.object({ action: z.literal("github_disconnect") }),
  response: z.object({ disconnected: z.boolean().describe("false: none was connected") }),
});

/** Action name → its contract (the OpenAPI document lists them in this order). */
export const VM_API_ACTIONS = {
  create,
  start,
  stop,
  delete: deleteProject,
  status,
  update,
  set_secret: setSecret,
  delete_secret: deleteSecret,
  github_authorize: githubAuthorize,
  github_disconnect: githubDisconnect,
} as const;
export type VmApiActionName = keyof typeof VM_API_ACTIONS;

export const VmApiRequestSchema = actionRequest(VM_API_ACTIONS);
export type VmApiRequest<A extends VmApiActionName> = RequestOf<(typeof VM_API_ACTIONS)[A]>;
export type VmApiResponse<A extends VmApiActionName> = ResponseOf<(typeof VM_API_ACTIONS)[A]>;
