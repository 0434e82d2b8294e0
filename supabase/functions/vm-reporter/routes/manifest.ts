/**
 * The VM's manifest (contract §10): the project's repository, its secrets and their revision, its
 * monthly budget with this month's cost so far (§11a: what a session may spend) and how the agents
 * deliver (§16: pull_request only for a GitHub project with the App, else push) and its
 * environment (§20: system_packages, check_command), read in one
 * statement (so the revision is the one of what it answers). The database holds the
 * secrets sealed; they are opened here, with the functions' key, for this answer only: not for
 * the request log, a log line or anything else.
 *
 * A GitHub project whose repository has the service's GitHub App installed, and whose push
 * access a person proved (contract §18: verified), gets git's credentials too (§16): an
 * installation token for that one repository narrowed to `contents: write` and `metadata: read`
 * (the VM writes code only), cached sealed or minted now (_shared/github/tokens.ts), handled as
 * the secrets are. Without it (no App, not installed, not verified, GitHub unreachable) the
 * repository comes without credentials and the VM uses what it has (GIT_TOKEN).
 */
import { ApiError } from "../../_contract/errors.ts";
import { type Manifest, manifest as contract } from "../../_contract/reporter.ts";
import { describeError, type Logger } from "../../_shared/log.ts";
import type { BaseServices } from "../../_shared/base_services.ts";
import { deliveryMode } from "../../_shared/github/delivery.ts";
import { githubRepositoryOf } from "../../_shared/github/repository.ts";
import { installationToken } from "../../_shared/github/tokens.ts";
import { decryptSecret, fromHex, projectSecretsKey } from "../../_shared/sealing.ts";
import { defineRoute, type Finish } from "../route.ts";

/**
 * What the statement answers: the manifest, its secrets still sealed (hex), and the delivery
 * setting, whose mode depends on the service's GitHub (contract §16).
 */
interface SealedManifest extends Omit<Manifest, "secrets" | "delivery"> {
  sealed: Record<string, string>;
  /** Someone proved push access to the repository the project names now (contract §18). */
  github_verified: boolean;
  delivery: Omit<NonNullable<Manifest["delivery"]>, "mode"> & { setting: string };
}

const open: Finish = async (data, { services, log }): Promise<Manifest> => {
  if (data === null) throw new ApiError("project_not_found", "This project no longer exists");
  const { sealed, github_verified, delivery: { setting, ...delivery }, ...opened } =
    data as SealedManifest;
  const manifest = {
    ...opened,
    repository: github_verified
      ? await withCredentials(opened.repository, services, log)
      : opened.repository,
    delivery: {
      mode: deliveryMode(services.config.github, {
        repository_url: opened.repository?.url ?? null,
        delivery: setting,
      }),
      ...delivery,
    },
  };
  const names = Object.keys(sealed);
  if (names.length === 0) return { ...manifest, secrets: {} };
  const key = projectSecretsKey(services.config, log);
  const secrets: Record<string, string> = {};
  for (const name of names) {
    try {
      secrets[name] = await decryptSecret(key, fromHex(sealed[name]!));
    } catch {
      log.error(
        `project secret ${name} cannot be opened with WEBHOOK_SECRET_KEY (it changed since the ` +
          "secret was set): set the secret again",
      );
      throw new ApiError(
        "secrets_unavailable",
        `The project secret ${name} cannot be opened with this service's key: set it again.`,
      );
    }
  }
  return { ...manifest, secrets };
};

type Repository = Manifest["repository"];

/** The verified repository with git's credentials when it is a GitHub one with the App installed. */
async function withCredentials(
  repository: Repository,
  services: BaseServices,
  log: Logger,
): Promise<Repository> {
  if (repository === null || !services.config.github.app) return repository;
  const github = githubRepositoryOf(repository.url, services.config.github.webUrl);
  if (!github) return repository;
  try {
    const token = await installationToken({ ...services, log }, github, "vm");
    if (!token) return repository;
    return {
      ...repository,
      credentials: {
        username: "x-access-token",
        password: token.token,
        expires_at: token.expiresAt,
      },
    };
  } catch (error) {
    log.warn("no GitHub token for the manifest: GitHub did not give one", {
      repository: `${github.owner}/${github.repo}`,
      ...describeError(error),
    });
    return repository;
  }
}

export const manifest = defineRoute(contract, {
  data: `(
    select jsonb_build_object(
      'repository', case when p.repository_url is null then null
        else jsonb_build_object('url', p.repository_url, 'branch', p.repository_branch) end,
      'sealed', coalesce((
        select jsonb_object_agg(s.name, encode(s.value_sealed, 'hex'))
        from private.project_secret_values s where s.project_id = p.id
      ), '{}'::jsonb),
      'revision', p.manifest_revision,
      'budget', case when p.monthly_budget_usd is null then null
        else jsonb_build_object('monthly_usd', p.monthly_budget_usd, 'spent_usd', c.total_usd,
          'month', to_char(c.month, 'YYYY-MM')) end,
      'delivery', jsonb_build_object('setting', p.delivery, 'branch_prefix', p.branch_prefix,
        'draft', p.draft_pull_requests, 'review_rounds', p.review_rounds,
        'ci_fix_rounds', p.ci_fix_rounds),
      'environment', jsonb_build_object('system_packages', to_jsonb(p.system_packages),
        'check_command', p.check_command),
      'github_verified', exists (select 1 from private.project_github_verification(p.id)))
    from public.projects p
    join public.month_to_date_costs c on c.project_id = p.id
    where p.id = a.project_id)`,
}, { finish: open });
