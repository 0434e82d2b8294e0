/**
 * What a database's schema IS, read from its catalog as one line per object: relations, columns
 * with their defaults, constraints, indexes, functions (body, settings, security), triggers,
 * views, policies, grants, comments, types, extensions, default privileges and the reconciler's
 * cron job. Two databases built two ways (the migrations, the declarative schemas) are the same
 * schema when their snapshots are equal; `catalogDifferences` names every object that is not.
 */
import type postgres from "postgres";

/** Object key (`function private.vm_stop(uuid, boolean)`) → its definition. */
export type CatalogSnapshot = Map<string, string>;

// Our schemas; the Supabase base objects (auth, extensions, graphql_public) belong to the platform.
const OWN_SCHEMAS = "('public', 'private')";

// ACLs are arrays whose order follows the order of the grants: sorted, two equal sets compare equal.
const acl = (column: string) =>
  `coalesce((select string_agg(a, ',' order by a) from unnest(${column}::text[]) a), '')`;

const SNAPSHOT = `
with own as (
  select oid, nspname from pg_catalog.pg_namespace where nspname in ${OWN_SCHEMAS}
),
rels as (
  select c.*, own.nspname, format('%I.%I', own.nspname, c.relname) as qname
  from pg_catalog.pg_class c join own on own.oid = c.relnamespace
)
select 'schema ' || n.nspname as key, ${acl("n.nspacl")} || ' ' ||
       coalesce(obj_description(n.oid, 'pg_namespace'), '') as definition
from pg_catalog.pg_namespace n where n.nspname in ${OWN_SCHEMAS}
union all
select 'relation ' || qname, concat_ws(' | ', relkind, relpersistence,
       'rls=' || relrowsecurity, 'force=' || relforcerowsecurity, array_to_string(reloptions, ','),
       pg_get_partkeydef(oid), pg_get_expr(relpartbound, oid), ${acl("relacl")},
       obj_description(oid, 'pg_class'))
from rels where relkind in ('r', 'p', 'v', 'm', 'f', 'S')
union all
select 'column ' || r.qname || '.' || quote_ident(a.attname), concat_ws(' | ',
       row_number() over (partition by r.oid order by a.attnum), format_type(a.atttypid, a.atttypmod),
       case when a.attnotnull then 'not null' end, pg_get_expr(d.adbin, d.adrelid),
       nullif(a.attidentity, ''), nullif(a.attgenerated, ''),
       case when a.attcollation <> t.typcollation then a.attcollation::regcollation::text end,
       ${acl("a.attacl")}, col_description(r.oid, a.attnum))
from rels r
join pg_catalog.pg_attribute a on a.attrelid = r.oid and a.attnum > 0 and not a.attisdropped
join pg_catalog.pg_type t on t.oid = a.atttypid
left join pg_catalog.pg_attrdef d on d.adrelid = r.oid and d.adnum = a.attnum
where r.relkind in ('r', 'p', 'v', 'm', 'f')
union all
select 'constraint ' || r.qname || '.' || quote_ident(con.conname),
       pg_get_constraintdef(con.oid) || coalesce(' | ' || obj_description(con.oid, 'pg_constraint'), '')
from pg_catalog.pg_constraint con join rels r on r.oid = con.conrelid
union all
select 'index ' || i.qname, pg_get_indexdef(i.oid) || coalesce(' | ' || obj_description(i.oid, 'pg_class'), '')
from rels i where i.relkind in ('i', 'I')
union all
select 'function ' || format('%I.%I', own.nspname, p.proname) || '(' ||
       pg_get_function_identity_arguments(p.oid) || ')',
       pg_get_functiondef(p.oid) || ' | ' || ${acl("p.proacl")} || ' | ' ||
       coalesce(obj_description(p.oid, 'pg_proc'), '')
from pg_catalog.pg_proc p join own on own.oid = p.pronamespace
where not exists (select 1 from pg_catalog.pg_depend dep
                  where dep.objid = p.oid and dep.deptype = 'e')
union all
select 'trigger ' || r.qname || '.' || quote_ident(tg.tgname),
       pg_get_triggerdef(tg.oid) || coalesce(' | ' || obj_description(tg.oid, 'pg_trigger'), '')
from pg_catalog.pg_trigger tg join rels r on r.oid = tg.tgrelid where not tg.tgisinternal
union all
select 'view ' || qname, pg_get_viewdef(oid) from rels where relkind in ('v', 'm')
union all
select 'policy ' || r.qname || '.' || quote_ident(pol.polname), concat_ws(' | ',
       pol.polcmd, case when pol.polpermissive then 'permissive' else 'restrictive' end,
       (select string_agg(coalesce(rol.rolname, 'public'), ',' order by rol.rolname)
          from unnest(pol.polroles) role_oid
          left join pg_catalog.pg_roles rol on rol.oid = role_oid),
       pg_get_expr(pol.polqual, pol.polrelid), pg_get_expr(pol.polwithcheck, pol.polrelid),
       obj_description(pol.oid, 'pg_policy'))
from pg_catalog.pg_policy pol
join (select oid, qname from rels
      union all
      -- Ours too: the policies on Supabase Realtime's messages (the schema is the platform's).
      select c.oid, format('%I.%I', n.nspname, c.relname)
      from pg_catalog.pg_class c join pg_catalog.pg_namespace n on n.oid = c.relnamespace
      where n.nspname = 'realtime') r on r.oid = pol.polrelid
union all
select 'type ' || format('%I.%I', own.nspname, t.typname), concat_ws(' | ', t.typtype,
       (select string_agg(e.enumlabel, ',' order by e.enumsortorder)
          from pg_catalog.pg_enum e where e.enumtypid = t.oid),
       format_type(t.typbasetype, t.typtypmod), ${acl("t.typacl")})
from pg_catalog.pg_type t join own on own.oid = t.typnamespace
where t.typtype in ('e', 'd', 'r', 'm')
   or (t.typtype = 'c' and exists (select 1 from pg_catalog.pg_class c
                                   where c.oid = t.typrelid and c.relkind = 'c'))
union all
select 'extension ' || e.extname, n.nspname
from pg_catalog.pg_extension e join pg_catalog.pg_namespace n on n.oid = e.extnamespace
where e.extname <> 'plpgsql'
union all
select 'default privileges ' || pg_get_userbyid(da.defaclrole) || ' ' ||
       coalesce(n.nspname, '(all schemas)') || ' ' || da.defaclobjtype::text, ${acl("da.defaclacl")}
from pg_catalog.pg_default_acl da left join pg_catalog.pg_namespace n on n.oid = da.defaclnamespace
`;

export async function catalogSnapshot(sql: postgres.Sql): Promise<CatalogSnapshot> {
  const rows = await sql.unsafe<{ key: string; definition: string | null }[]>(SNAPSHOT);
  const snapshot: CatalogSnapshot = new Map(rows.map((row) => [row.key, row.definition ?? ""]));
  // pg_cron exists on hosted Supabase only; where it does, the reconciler's job is part of the schema.
  const [{ has_cron }] = await sql<[{ has_cron: boolean }]>`
    select to_regclass('cron.job') is not null as has_cron`;
  if (has_cron) {
    for (
      const job of await sql.unsafe<{ jobname: string; schedule: string; command: string }[]>(
        "select jobname, schedule, command from cron.job",
      )
    ) {
      snapshot.set(`cron job ${job.jobname}`, `${job.schedule} | ${job.command}`);
    }
  }
  return snapshot;
}

/** One line per object that differs, named, with both definitions when both exist. */
export function catalogDifferences(
  expected: CatalogSnapshot,
  actual: CatalogSnapshot,
  names: { expected: string; actual: string },
): string[] {
  const differences: string[] = [];
  for (const key of [...new Set([...expected.keys(), ...actual.keys()])].sort()) {
    const want = expected.get(key);
    const got = actual.get(key);
    if (want === got) continue;
    if (want === undefined) differences.push(`${key}: only in ${names.actual}`);
    else if (got === undefined) differences.push(`${key}: only in ${names.expected}`);
    else {
      differences.push(`${key}: differs\n  ${names.expected}: ${want}\n  ${names.actual}: ${got}`);
    }
  }
  return differences;
}
