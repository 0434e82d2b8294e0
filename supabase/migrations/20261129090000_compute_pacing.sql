-- Compute pacing (issue 31, the morning burst; docs/architecture.md#compute-drivers): the cloud
-- provider's write budget shared by every process (private.compute_write_budgets, a token bucket on
-- the database clock), the paced claim, throttled sends rescheduled after Retry-After with their
-- attempt given back, sends in doubt (vm_operations.send_started_at), and the reconciler watching
-- only VMs whose operation was sent.
-- supabase/schemas/ holds the same objects (05_vm_lifecycle.sql and 21_compute_pacing.sql).

-- 05_vm_lifecycle.sql
alter table private.vm_operations add column send_started_at timestamptz;

/**
 * Projects waiting for their VM: in a transitional state, with their operation if it was sent,
 * longest waiting since it was sent first. A project whose operation is still to be sent (queued
 * behind the provider's pace, or backing off) is left out: its VM cannot have moved for it, and
 * reading it would spend the provider's read budget on nothing (a 09:00 burst queues thousands).
 */
create or replace function private.transitional_projects(p_limit integer) returns table (
  project_id uuid,
  status text,
  operation_id uuid,
  operation_kind text
)
language sql
stable
security definer
set search_path = ''
as $$
  select p.id, p.status, o.id, o.kind
  from public.projects p
  left join lateral (
    select id, kind, updated_at from private.vm_operations
    where project_id = p.id and state = 'submitted'
    order by created_at desc limit 1
  ) o on true
  where p.is_transitional
    and not exists (
      select 1 from private.vm_operations q where q.project_id = p.id and q.state = 'pending'
    )
  order by coalesce(o.updated_at, p.status_changed_at)
  limit p_limit;
$$;

-- 21_compute_pacing.sql

create table private.compute_write_budgets (
  -- The driver's write scope, e.g. 'azure:<subscription id>:<client id>'.
  scope text primary key,
  -- Tokens as of refilled_at (fractional); they refill at the configured rate up to the size.
  tokens double precision not null,
  refilled_at timestamptz not null,
  -- After a 429: nothing is sent before this.
  paused_until timestamptz,
  -- The provider's x-ms-ratelimit-remaining-subscription-writes at the last accepted write.
  reported_remaining integer,
  reported_at timestamptz,
  throttled_count bigint not null default 0,
  last_throttled_at timestamptz
);

alter table private.compute_write_budgets enable row level security;

revoke all on private.compute_write_budgets from public, anon, authenticated;

comment on table private.compute_write_budgets is
  'The compute provider''s write budget per scope (subscription and principal), shared by every reconciler process: a token bucket refilled on the database clock, pulled down by the remaining writes the provider reports and emptied by its 429s.';

/**
 * The tokens a bucket holds at `p_now`: what it held at `p_refilled_at`, refilled at
 * `p_refill_per_second`, at most `p_size`.
 */
create or replace function private.refilled_compute_writes(
  p_tokens double precision,
  p_refilled_at timestamptz,
  p_size integer,
  p_refill_per_second double precision,
  p_now timestamptz
) returns double precision
language sql
immutable
set search_path = ''
as $$
  select least(
    p_size::double precision,
    greatest(p_tokens, 0)
      + p_refill_per_second * greatest(0, extract(epoch from p_now - p_refilled_at))::double precision
  );
$$;

/**
 * Locks a scope's budget row (created full on first use) and answers it with the tokens it may
 * grant now: none while it is paused.
 */
create or replace function private.lock_compute_write_budget(
  p_scope text,
  p_size integer,
  p_refill_per_second double precision,
  p_now timestamptz,
  out budget private.compute_write_budgets,
  out available double precision,
  out refilled double precision
)
language plpgsql
volatile
security definer
set search_path = ''
as $$
begin
  insert into private.compute_write_budgets (scope, tokens, refilled_at)
    values (p_scope, p_size, p_now)
    on conflict (scope) do nothing;
  select * into budget from private.compute_write_budgets where scope = p_scope for update;
  refilled := private.refilled_compute_writes(
    budget.tokens, budget.refilled_at, p_size, p_refill_per_second, p_now);
  available := case when budget.paused_until > p_now then 0 else refilled end;
end;
$$;

/**
 * The reconciler's claim, paced: claims as many due operations as the budget has whole tokens
 * (at most `p_limit`), for `p_lease_seconds`, spending one token each, in one transaction, so
 * concurrent reconcilers share one budget. Each operation comes with `in_doubt` (an earlier send
 * of it never had its answer recorded) and `read_first` (its project has a last_error: its VM
 * may be gone or failed). `backlog` tells whether operations are still due after this claim (the
 * budget is the limit: a burst is under way); with no token, one row says only that.
 */
create or replace function private.claim_paced_vm_operations(
  p_scope text,
  p_size integer,
  p_refill_per_second double precision,
  p_limit integer,
  p_lease_seconds integer,
  p_max_attempts integer
) returns table (op jsonb, backlog boolean)
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_now timestamptz := clock_timestamp();
  v_budget record;
  v_grant integer;
  v_claimed jsonb[];
  v_backlog boolean;
begin
  select * into v_budget
    from private.lock_compute_write_budget(p_scope, p_size, p_refill_per_second, v_now);
  v_grant := least(p_limit, floor(v_budget.available)::integer);
  if v_grant > 0 then
    with due as (
      select o.id, o.send_started_at is not null as in_doubt
      from private.vm_operations o
      where o.state = 'pending'
        and o.next_attempt_at <= v_now
        and o.attempts < p_max_attempts
      order by o.next_attempt_at
      limit v_grant
      for update skip locked
    ), claimed as (
      update private.vm_operations o
        set attempts = o.attempts + 1,
            next_attempt_at = v_now + make_interval(secs => p_lease_seconds),
            send_started_at = v_now
      from due, public.projects p
      where o.id = due.id and p.id = o.project_id
      returning jsonb_build_object(
        'operation_id', o.id, 'kind', o.kind, 'force', o.force, 'attempts', o.attempts,
        'project_id', p.id, 'organization_id', p.organization_id, 'name', p.name,
        'region', p.region, 'vm_size', p.vm_size, 'in_doubt', due.in_doubt,
        'read_first', p.last_error is not null
      ) as claimed_op
    )
    select coalesce(array_agg(claimed_op), '{}') into v_claimed from claimed;
  else
    v_claimed := '{}';
  end if;
  if cardinality(v_claimed) > 0 then
    update private.compute_write_budgets
      set tokens = v_budget.refilled - cardinality(v_claimed), refilled_at = v_now
      where scope = p_scope;
  end if;
  -- The claimed ones are leased past v_now: what is still due waits for tokens.
  v_backlog := exists (
    select 1 from private.vm_operations o
    where o.state = 'pending' and o.next_attempt_at <= v_now and o.attempts < p_max_attempts
  );
  if cardinality(v_claimed) = 0 then
    if v_backlog then
      return query select null::jsonb, true;
    end if;
    return;
  end if;
  return query select c, v_backlog from unnest(v_claimed) c;
end;
$$;

grant execute on function private.claim_paced_vm_operations(text, integer, double precision, integer, integer, integer)
  to service_role;

/**
 * Gives a claimed operation back unsent: due again in `p_seconds`, its attempt returned.
 */
create or replace function private.defer_vm_operation(p_operation_id uuid, p_seconds double precision)
returns void
language sql
volatile
security definer
set search_path = ''
as $$
  update private.vm_operations
    set attempts = greatest(attempts - 1, 0),
        next_attempt_at = clock_timestamp() + make_interval(secs => greatest(p_seconds, 0)),
        send_started_at = null
    where id = p_operation_id and state = 'pending';
$$;

grant execute on function private.defer_vm_operation(uuid, double precision) to service_role;

/**
 * One token for an operation claimed outside the reconciler (vm-api sends its own right after
 * the action): answers 0 and marks the send begun when there is one; otherwise defers the
 * operation to when the next token is due and answers the seconds until then.
 */
create or replace function private.take_compute_write(
  p_operation_id uuid,
  p_scope text,
  p_size integer,
  p_refill_per_second double precision
) returns double precision
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_now timestamptz := clock_timestamp();
  v_budget record;
  v_wait double precision;
begin
  select * into v_budget
    from private.lock_compute_write_budget(p_scope, p_size, p_refill_per_second, v_now);
  if v_budget.available >= 1 then
    update private.compute_write_budgets
      set tokens = v_budget.refilled - 1, refilled_at = v_now
      where scope = p_scope;
    update private.vm_operations set send_started_at = v_now
      where id = p_operation_id and state = 'pending';
    return 0;
  end if;
  v_wait := greatest(
    coalesce(extract(epoch from (v_budget.budget).paused_until - v_now)::double precision, 0),
    (1 - least(v_budget.refilled, 1)) / p_refill_per_second,
    0.001
  );
  perform private.defer_vm_operation(p_operation_id, v_wait);
  return v_wait;
end;
$$;

grant execute on function private.take_compute_write(uuid, text, integer, double precision)
  to service_role;

/**
 * The provider accepted the operation: it is submitted (the reconciler now watches the VM), and
 * the budget is pulled down to the remaining writes the provider reported, if it did.
 */
create or replace function private.vm_operation_accepted(
  p_operation_id uuid,
  p_scope text,
  p_size integer,
  p_refill_per_second double precision,
  p_remaining integer
) returns void
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_now timestamptz := clock_timestamp();
begin
  update private.vm_operations set state = 'submitted', last_error = null, send_started_at = null
    where id = p_operation_id and state = 'pending';
  if p_remaining is not null then
    update private.compute_write_budgets b
      set tokens = least(
            private.refilled_compute_writes(b.tokens, b.refilled_at, p_size, p_refill_per_second, v_now),
            greatest(p_remaining, 0)),
          refilled_at = v_now,
          reported_remaining = p_remaining,
          reported_at = v_now
      where b.scope = p_scope;
  end if;
end;
$$;

grant execute on function private.vm_operation_accepted(uuid, text, integer, double precision, integer)
  to service_role;

/**
 * The provider throttled the send (429): the operation is due again after `p_retry_after_seconds`
 * with its attempt given back, so throttling alone never gives it up. With `p_pause` (a write
 * was refused) the scope's budget is emptied and paused until then. Answers 'throttled', or
 * 'gone' when the operation is no longer pending.
 */
create or replace function private.throttle_vm_operation(
  p_operation_id uuid,
  p_scope text,
  p_retry_after_seconds double precision,
  p_error text,
  p_pause boolean
) returns text
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_now timestamptz := clock_timestamp();
  v_until timestamptz := v_now + make_interval(secs => greatest(p_retry_after_seconds, 0));
  v_outcome text := 'throttled';
begin
  update private.vm_operations
    set attempts = greatest(attempts - 1, 0),
        next_attempt_at = v_until,
        last_error = p_error,
        send_started_at = null
    where id = p_operation_id and state = 'pending';
  if not found then
    v_outcome := 'gone';
  end if;
  if p_pause then
    update private.compute_write_budgets
      set tokens = 0,
          refilled_at = v_now,
          paused_until = greatest(coalesce(paused_until, v_until), v_until),
          throttled_count = throttled_count + 1,
          last_throttled_at = v_now
      where scope = p_scope;
  end if;
  return v_outcome;
end;
$$;

grant execute on function private.throttle_vm_operation(uuid, text, double precision, text, boolean)
  to service_role;

/**
 * A send failed otherwise (retry_vm_operation decides between a backoff and giving up). With
 * `p_answered` the provider's answer is known (a refusal), so the send is no longer in doubt;
 * a send that timed out or lost its connection stays in doubt.
 */
create or replace function private.vm_operation_send_failed(
  p_operation_id uuid,
  p_error text,
  p_retryable boolean,
  p_max_attempts integer,
  p_backoff_seconds integer,
  p_answered boolean
) returns text
language plpgsql
volatile
security definer
set search_path = ''
as $$
begin
  if p_answered then
    update private.vm_operations set send_started_at = null
      where id = p_operation_id and state = 'pending';
  end if;
  return private.retry_vm_operation(
    p_operation_id, p_error, p_retryable, p_max_attempts, p_backoff_seconds);
end;
$$;

grant execute on function private.vm_operation_send_failed(uuid, text, boolean, integer, integer, boolean)
  to service_role;

/**
 * Keeps the lease of a send still waiting for the provider's answer, so the operation is not
 * claimed and sent again meanwhile. Only while the caller's claim holds (same attempt, lease not
 * yet run out). Answers whether it was extended.
 */
create or replace function private.extend_vm_operation_lease(
  p_operation_id uuid,
  p_attempts integer,
  p_lease_seconds integer
) returns boolean
language sql
volatile
security definer
set search_path = ''
as $$
  with extended as (
    update private.vm_operations
      set next_attempt_at = clock_timestamp() + make_interval(secs => p_lease_seconds)
      where id = p_operation_id and state = 'pending' and attempts = p_attempts
        and next_attempt_at > clock_timestamp()
      returning 1
  )
  select exists (select 1 from extended);
$$;

grant execute on function private.extend_vm_operation_lease(uuid, integer, integer) to service_role;
