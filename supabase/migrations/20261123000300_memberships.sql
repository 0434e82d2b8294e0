-- =====================================================================================
-- Memberships, by topic: who may see and act on an organization or a project. The policies
-- of every table in public ask these predicates; the SQL functions behind vm-api and the
-- dashboard's RPCs ask them before they act. SECURITY DEFINER so a policy can ask without
-- recursing into the membership tables' own policies.
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

/**
 * Is the current user (auth.uid()) a member of the project?
 */
create or replace function private.is_project_member(p_project_id uuid) returns boolean
language plpgsql
stable
security definer
set search_path = ''
as $$
begin
  return exists (
    select 1
    from public.project_members m
    where m.project_id = p_project_id
      and m.user_id = (select auth.uid())
  );
end;
$$;

grant execute on function private.is_project_member(uuid) to authenticated, service_role;

/**
 * The signed-in user's id when they are a member of the project; otherwise VA403 (a project that
 * does not exist looks the same as another's). For the functions behind the dashboard's RPCs.
 */
create or replace function private.require_project_member(p_project_id uuid) returns uuid
language plpgsql
stable
security definer
set search_path = ''
as $$
begin
  if auth.uid() is null or not private.is_project_member(p_project_id) then
    raise exception 'You are not a member of this project' using errcode = 'VA403';
  end if;
  return auth.uid();
end;
$$;
