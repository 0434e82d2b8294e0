/**
 * The VM's manifest (contract §10): the project's repository, its secrets and their revision, and
 * its monthly budget with this month's cost so far (§11a: what a session may spend), read in one
 * statement (so the revision is the one of what it answers). The database holds the
 * secrets sealed; they are opened here, with the functions' key, for this answer only: not for
 * the request log, a log line or anything else.
 */
import { ApiError } from "../../_contract/errors.ts";
import { type Manifest, manifest as contract } from "../../_contract/reporter.ts";
import { decryptSecret, fromHex, projectSecretsKey } from "../../_shared/sealing.ts";
import { defineRoute, type Finish } from "../route.ts";

/** What the statement answers: the manifest, its secrets still sealed (hex). */
interface SealedManifest extends Omit<Manifest, "secrets"> {
  sealed: Record<string, string>;
}

const open: Finish = async (data, { services, log }): Promise<Manifest> => {
  if (data === null) throw new ApiError("project_not_found", "This project no longer exists");
  const { sealed, ...manifest } = data as SealedManifest;
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
          'month', to_char(c.month, 'YYYY-MM')) end)
    from public.projects p
    join public.month_to_date_costs c on c.project_id = p.id
    where p.id = a.project_id)`,
}, { finish: open });
