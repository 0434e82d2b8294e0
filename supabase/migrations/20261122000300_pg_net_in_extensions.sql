-- pg_net belongs in the `extensions` schema, as Supabase installs it (Database → Extensions) and
-- as the Security Advisor expects: 20261121001200_reconciler_schedule.sql created it without a
-- schema, so where that migration enabled it, it was recorded in `public`. pg_net cannot be moved
-- with `alter extension ... set schema`, so it is re-created; its functions stay in `net`, where
-- the scheduled job calls them, so the schedule is unaffected. Where pg_net is absent, or already
-- in `extensions`, nothing happens.
do $$
begin
  if exists (
    select 1 from pg_extension e join pg_namespace n on n.oid = e.extnamespace
    where e.extname = 'pg_net' and n.nspname <> 'extensions'
  ) then
    create schema if not exists extensions;
    drop extension pg_net;
    create extension pg_net with schema extensions;
  end if;
end
$$;
