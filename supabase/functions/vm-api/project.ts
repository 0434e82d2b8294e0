/**
 * The Project resource as status and update answer it: private.vm_status's `project`, its
 * timestamps in UTC to the millisecond.
 */
import type { ResponseOf } from "../_contract/actions.ts";
import type { status } from "../_contract/vm_api.ts";

/** private.vm_status's answer: the contract's, its timestamps as PostgreSQL writes them. */
export type StatusAnswer = ResponseOf<typeof status>;
/** The project as private.vm_status answers it: status adds `github` (contract §16). */
export type Project = Omit<StatusAnswer["project"], "github">;

export function projectAnswer(project: Project): Project {
  const { month_to_date: spend } = project;
  return {
    ...project,
    created_at: utc(project.created_at),
    updated_at: utc(project.updated_at),
    status_changed_at: utc(project.status_changed_at),
    next_scheduled_start_at: utcOrNull(project.next_scheduled_start_at),
    next_scheduled_stop_at: utcOrNull(project.next_scheduled_stop_at),
    month_to_date: {
      ...spend,
      ...(spend.vm_usd_per_hour === null
        ? {
          note: `No price is known for ${project.vm_size} in ${project.region} ` +
            "(public.vm_prices): its compute counts $0.",
        }
        : {}),
    },
  };
}

/** PostgreSQL writes a timestamptz in the session's zone, to the microsecond; we answer UTC ms. */
export const utc = (at: string) => new Date(at).toISOString();
const utcOrNull = (at: string | null) => at === null ? null : utc(at);
