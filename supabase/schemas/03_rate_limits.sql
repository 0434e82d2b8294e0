-- =====================================================================================
-- Rate limits: fixed one-window counters kept in PostgreSQL, so a limit holds across
-- every isolate and process, measured on the database clock. The counting statement lives
-- with the functions that call it (_shared/rate_limit.ts).
-- =====================================================================================

-- Every report updates its project's rate-limit row in place. Room left on each page lets those
-- updates stay on the page (HOT: no new index entries, no page splits).
create table private.rate_limits (
  key text primary key,
  window_started_at timestamptz not null,
  hits integer not null
) with (fillfactor = 70);

-- Not reachable through the Data API (private is not exposed), and closed even if it were.
alter table private.rate_limits enable row level security;

revoke all on private.rate_limits from public, anon, authenticated;

/**
 * Forgets windows that ended long ago; called by the reconciler.
 */
create or replace function private.prune_rate_limits(p_older_than interval default '1 hour')
returns integer
language sql
volatile
security definer
set search_path = ''
as $$
  with gone as (
    delete from private.rate_limits where window_started_at < clock_timestamp() - p_older_than
    returning 1
  )
  select count(*)::integer from gone;
$$;

grant execute on function private.prune_rate_limits(interval) to service_role;
