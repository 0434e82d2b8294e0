-- =====================================================================================
-- Organizations and their members. Managed outside this service (a seed or the account
-- system inserts them); here they are read to decide who may create projects and who may
-- manage the organization's webhooks.
-- =====================================================================================

create table public.organizations (
  id uuid primary key default gen_random_uuid(),
  name text not null check (char_length(name) between 1 and 200),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

create trigger organizations_touch_updated_at
  before update on public.organizations
  for each row execute function private.touch_updated_at();

alter table public.organizations enable row level security;

create table public.organization_members (
  organization_id uuid not null references public.organizations (id) on delete cascade,
  user_id uuid not null references auth.users (id) on delete cascade,
  role text not null default 'member' check (role in ('owner', 'admin', 'member')),
  created_at timestamptz not null default now(),
  primary key (organization_id, user_id)
);

-- Membership is looked up by user on every request ("which organizations is this user in?").
create index organization_members_user_id_idx on public.organization_members (user_id);

alter table public.organization_members enable row level security;

revoke all on public.organizations, public.organization_members from anon;
revoke insert, update, delete, truncate on public.organizations, public.organization_members
  from authenticated;
grant select on public.organizations, public.organization_members to authenticated;

-- =====================================================================================
-- Membership predicates. The policies of every table in public ask these; the SQL functions
-- behind vm-api, webhooks and the dashboard's RPCs ask them before they act. SECURITY DEFINER
-- so a policy can ask without recursing into the membership tables' own policies.
-- =====================================================================================

/**
 * Is the current user (auth.uid()) a member of the organization?
 */
create or replace function private.is_organization_member(p_organization_id uuid) returns boolean
language plpgsql
stable
security definer
set search_path = ''
as $$
begin
  return exists (
    select 1
    from public.organization_members m
    where m.organization_id = p_organization_id
      and m.user_id = (select auth.uid())
  );
end;
$$;

grant execute on function private.is_organization_member(uuid) to authenticated, service_role;

/** Is the signed-in user an owner or admin of the organization (who may manage its webhooks)? */
create or replace function private.is_organization_admin(p_organization_id uuid)
returns boolean
language plpgsql
stable
security definer
set search_path = ''
as $$
begin
  return exists (
    select 1 from public.organization_members m
    where m.organization_id = p_organization_id
      and m.user_id = (select auth.uid())
      and m.role in ('owner', 'admin')
  );
end;
$$;

grant execute on function private.is_organization_admin(uuid) to authenticated;

create policy "Organizations are visible to their members"
  on public.organizations for select
  to authenticated
  using (private.is_organization_member(id));

create policy "Organization memberships are visible to fellow members"
  on public.organization_members for select
  to authenticated
  using (private.is_organization_member(organization_id));
