-- The structure every schema file (supabase/schemas/*.sql) keeps to, checked across all of them:
-- the tables the outside world names, RLS on every public table, SECURITY DEFINER functions only
-- in private with an empty search_path, no public function for anon, an index behind every
-- foreign key (Security Advisor's splinter lints).
begin;
\ir fixtures.psql
select plan(18);

-- The tables the outside world names (contract §2).
select has_table('public', 'organizations', 'organizations exists');
select has_table('public', 'organization_members', 'organization_members exists');
select has_table('public', 'projects', 'projects exists');
select has_table('public', 'project_members', 'project_members exists');
select has_table('public', 'project_activity', 'project_activity exists');

select columns_are('public', 'project_activity',
  array['id', 'project_id', 'action', 'details', 'created_at'],
  'project_activity has the pinned columns');
select has_column('public', 'projects', 'health_status', 'projects has health_status');
select col_default_is('public', 'projects', 'region', 'australiaeast'::text, 'region defaults to australiaeast');
select col_default_is('public', 'projects', 'vm_size', 'Standard_D2s_v3'::text, 'vm_size defaults to Standard_D2s_v3');

-- Row Level Security is on for every table in public, with no exception.
select is(
  (select count(*)::int from pg_class c join pg_namespace n on n.oid = c.relnamespace
   where n.nspname = 'public' and c.relkind in ('r', 'p') and not c.relrowsecurity),
  0,
  'every table in public has RLS enabled'
);

-- SECURITY DEFINER functions live in private and pin an empty search_path. The platform's own
-- schemas are excluded by name: every hosted Supabase database has SECURITY DEFINER functions
-- there (pgbouncer.get_auth, pg_net's net.http_get/http_post, ...), and they are not ours.
select is(
  (select count(*)::int from pg_proc p join pg_namespace n on n.oid = p.pronamespace
   where p.prosecdef and n.nspname not in (
       'private',
       'pg_catalog', 'information_schema',
       'auth', 'extensions', 'pgbouncer', 'net', 'cron', 'vault', 'pgsodium', 'pgsodium_masks',
       'graphql', 'graphql_public', 'realtime', 'storage', 'supabase_functions',
       'supabase_migrations', '_realtime', '_analytics')
     and n.nspname not like 'pg\_temp\_%' and n.nspname not like 'pg\_toast%'),
  0,
  'no SECURITY DEFINER function outside private'
);
select is(
  (select count(*)::int from pg_proc p join pg_namespace n on n.oid = p.pronamespace
   where p.prosecdef and n.nspname = 'private'
     and not coalesce(p.proconfig @> array['search_path=""'], false)),
  0,
  'every SECURITY DEFINER function pins search_path to empty'
);

-- Every function of ours pins an empty search_path, as Supabase's Security Advisor (splinter lint
-- 0011 function_search_path_mutable, the same query) asks of every function outside the
-- platform's schemas and not owned by an extension: caught here, not on the hosted dashboard.
-- `tests` holds fixtures.psql's helpers, created in this file's transaction and never deployed.
select is(
  (select coalesce(array_agg(format('%s.%s(%s)', n.nspname, p.proname,
                                    pg_get_function_identity_arguments(p.oid))
                             order by 1), '{}')
   from pg_proc p
   join pg_namespace n on n.oid = p.pronamespace
   left join pg_depend dep on dep.objid = p.oid and dep.deptype = 'e'
   where n.nspname not in (
       '_timescaledb_cache', '_timescaledb_catalog', '_timescaledb_config', '_timescaledb_internal',
       'auth', 'cron', 'extensions', 'graphql', 'graphql_public', 'information_schema', 'net',
       'pgroonga', 'pgsodium', 'pgsodium_masks', 'pgtle', 'pgbouncer', 'pg_catalog', 'realtime',
       'repack', 'storage', 'supabase_functions', 'supabase_migrations', 'tiger', 'topology',
       'vault', 'tests')
     and n.nspname not like 'pg\_temp\_%' and n.nspname not like 'pg\_toast%'
     and dep.objid is null
     and not coalesce(p.proconfig, '{}') && array['search_path=""']),
  '{}'::text[],
  'no function of ours has a mutable search_path (splinter 0011)'
);

-- Nothing in public is executable by anon.
select is(
  (select count(*)::int from pg_proc p join pg_namespace n on n.oid = p.pronamespace
   where n.nspname = 'public' and has_function_privilege('anon', p.oid, 'execute')),
  0,
  'anon can execute no function in public'
);

select is(
  (select has_table_privilege('anon', 'public.projects', 'select')),
  false,
  'anon cannot read projects at all'
);
select is(
  (select has_table_privilege('authenticated', 'public.projects', 'insert')),
  false,
  'authenticated cannot insert projects directly'
);
select is(
  (select has_table_privilege('authenticated', 'public.project_activity', 'update')),
  false,
  'authenticated cannot change activity directly'
);

-- Splinter 0001 (unindexed_foreign_keys): deleting a referenced row (a project, an auth user)
-- must find the referencing rows by index, not by scanning. An index counts when the key's
-- columns lead it and it covers every referencing row: no predicate, or only "<column> IS NOT
-- NULL" on a nullable single-column key (null never references anything).
select is(
  array(
    select format('%s (%s)', c.conrelid::regclass, c.conname)
    from pg_constraint c
    join pg_namespace n on n.oid = c.connamespace
    join pg_class r on r.oid = c.conrelid
    where c.contype = 'f' and n.nspname in ('public', 'private') and not r.relispartition
      and not exists (
        select 1 from pg_index i
        where i.indrelid = c.conrelid
          and (i.indkey::int2[])[0:cardinality(c.conkey) - 1] @> c.conkey
          and c.conkey @> (i.indkey::int2[])[0:cardinality(c.conkey) - 1]
          and (i.indpred is null
            or (cardinality(c.conkey) = 1
                and pg_get_expr(i.indpred, i.indrelid) = format('(%I IS NOT NULL)',
                  (select a.attname from pg_attribute a
                   where a.attrelid = c.conrelid and a.attnum = c.conkey[1])))))
    order by 1
  ),
  '{}'::text[],
  'every foreign key has an index its deletes can use (splinter 0001)'
);

select * from finish();
rollback;
