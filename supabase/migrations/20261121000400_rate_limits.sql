-- =====================================================================================
-- Rate limits: fixed one-window counters kept in PostgreSQL, so a limit holds across
-- every isolate and process, measured on the database clock.
-- =====================================================================================
create table private.rate_limits (
  key text primary key,
  window_started_at timestamptz not null,
  hits integer not null
);

-- Not reachable through the Data API (private is not exposed), and closed even if it were.
alter table private.rate_limits enable row level security;
revoke all on private.rate_limits from public, anon, authenticated;

/**
 * Counts one request against `p_key` and says whether it is within `p_limit` per
 * `p_window_seconds`. One statement: concurrent callers serialise on the row, so exactly
 * `p_limit` requests pass in a window. `retry_after_seconds` is how long until the window
 * resets (at least 1), meaningful when `allowed` is false.
 */
create or replace function private.hit_rate_limit(
  p_key text,
  p_limit integer,
  p_window_seconds integer default 60
) returns table (allowed boolean, retry_after_seconds integer)
language sql
volatile
security definer
set search_path = ''
as $$
  with hit as (
    insert into private.rate_limits as r (key, window_started_at, hits)
    values (p_key, clock_timestamp(), 1)
    on conflict (key) do update set
      window_started_at = case
        when r.window_started_at + make_interval(secs => p_window_seconds) <= clock_timestamp()
          then clock_timestamp()
        else r.window_started_at
      end,
      hits = case
        when r.window_started_at + make_interval(secs => p_window_seconds) <= clock_timestamp()
          then 1
        else r.hits + 1
      end
    returning r.window_started_at, r.hits
  )
  select
    hit.hits <= p_limit,
    greatest(1, ceil(extract(epoch from
      hit.window_started_at + make_interval(secs => p_window_seconds) - clock_timestamp()
    ))::integer)
  from hit;
$$;

revoke execute on function private.hit_rate_limit(text, integer, integer) from public;
grant execute on function private.hit_rate_limit(text, integer, integer) to service_role;

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

revoke execute on function private.prune_rate_limits(interval) from public;
grant execute on function private.prune_rate_limits(interval) to service_role;
