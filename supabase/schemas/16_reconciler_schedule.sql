-- =====================================================================================
-- The reconciler's schedule. Hosted, it runs every minute: pg_cron calls the vm-reconciler
-- function with pg_net, reading its URL and secret from Vault (never from this file). Where
-- pg_cron or pg_net is not available (plain PostgreSQL, local stacks) nothing is scheduled and
-- the file still applies: `deno task start` runs the reconciler itself.
--
-- Once per project, in the SQL editor (docs/operations.md):
--   select vault.create_secret('https://<ref>.supabase.co/functions/v1/vm-reconciler', 'vm_reconciler_url');
--   select vault.create_secret('<the RECONCILER_SECRET of the function>', 'vm_reconciler_secret');
-- =====================================================================================

do $schedule$
begin
  if not exists (select 1 from pg_available_extensions where name = 'pg_cron')
    or not exists (select 1 from pg_available_extensions where name = 'pg_net')
  then
    raise notice 'pg_cron or pg_net is not available: vm-reconciler is not scheduled here';
    return;
  end if;

  create extension if not exists pg_cron;
  -- In `extensions`, as Supabase installs it and as the Security Advisor expects; its functions
  -- live in `net` whatever the extension's schema.
  create extension if not exists pg_net with schema extensions;

  -- Named: scheduling again replaces the job instead of adding a second one. Until both
  -- secrets exist the job sends nothing. Runs may overlap safely (claims use SKIP LOCKED).
  perform cron.schedule('vm-reconciler', '* * * * *', $job$
    select net.http_post(
      url := s.url,
      headers := jsonb_build_object(
        'Authorization', 'Bearer ' || s.secret,
        'Content-Type', 'application/json'
      ),
      body := '{}'::jsonb,
      timeout_milliseconds := 55000
    )
    from (
      select
        (select decrypted_secret from vault.decrypted_secrets where name = 'vm_reconciler_url') as url,
        (select decrypted_secret from vault.decrypted_secrets where name = 'vm_reconciler_secret') as secret
    ) s
    where s.url is not null and s.secret is not null;
  $job$);
end
$schedule$;
