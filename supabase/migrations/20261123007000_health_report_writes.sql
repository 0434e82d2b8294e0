-- =====================================================================================
-- A health report's statement does less in SQL (vm-reporter/routes/health.ts): the health rule
-- is applied to the validated body in TypeScript, where a PL/pgSQL call per report cost more than
-- the rule, and the project's row is written through a function the statement calls only when the
-- health changes, so the usual report (same health as before) plans and starts no UPDATE of
-- public.projects at all.
-- =====================================================================================

drop function private.derive_health(jsonb);

/**
 * Sets the project's health from a report taken at `p_reported_at`, unless a newer report is
 * stored (a retried, older report must not win) or the health is already that; answers the
 * project's status either way.
 */
create function private.set_project_health(
  p_project_id uuid,
  p_health text,
  p_reported_at timestamptz
) returns text
language plpgsql
volatile
set search_path = ''
as $$
declare
  v_status text;
begin
  update public.projects p set health_status = p_health
    where p.id = p_project_id and p.health_status is distinct from p_health
      and private.is_newest_health_report(p.id, p_reported_at)
    returning p.status into v_status;
  if found then
    return v_status;
  end if;
  select p.status into v_status from public.projects p where p.id = p_project_id;
  return v_status;
end;
$$;

-- Only the reporter's statement (its owner's role) calls it, as is_newest_health_report.
revoke execute on function private.set_project_health(uuid, text, timestamptz) from public;
