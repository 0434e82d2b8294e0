-- =====================================================================================
-- Persona files: SOUL.md, AGENTS.md and COORDINATION.md of a project's agent team.
-- Every save is kept as a version (public.persona_file_versions; the Config tab reads the
-- current ones through public.persona_files) and sent to the VM as an update_persona_files
-- command, which the VM agent writes atomically into its workspace. The dashboard saves
-- through public.save_persona_file (12_data_api.sql).
-- =====================================================================================

-- Config tab: every saved version of every persona file.
create table public.persona_file_versions (
  project_id uuid not null references public.projects (id) on delete cascade,
  name text not null check (name in ('SOUL.md', 'AGENTS.md', 'COORDINATION.md')),
  version integer not null check (version >= 1),
  content text not null check (octet_length(content) <= 262144),
  created_by uuid references auth.users (id) on delete set null,
  created_at timestamptz not null default now(),
  primary key (project_id, name, version)
);

-- Deleting a user sets created_by to null: found by index, not by a scan.
create index persona_file_versions_created_by_idx on public.persona_file_versions (created_by)
  where created_by is not null;

alter table public.persona_file_versions enable row level security;

revoke all on public.persona_file_versions from anon, authenticated;
grant select on public.persona_file_versions to authenticated;

create policy "Persona files are visible to project members"
  on public.persona_file_versions for select to authenticated
  using (private.is_project_member(project_id));

-- Config: the current version of each persona file.
create view public.persona_files with (security_invoker = true) as
  select distinct on (project_id, name) project_id, name, version, content, created_by,
         created_at as updated_at
  from public.persona_file_versions
  order by project_id, name, version desc;

/**
 * A member saves a new version of a persona file. Returns the version (1, 2, ... per file).
 * VA403 for a non-member, VA400 for another file name or content over 256 KiB.
 */
create or replace function private.save_persona_file(p_project_id uuid, p_name text, p_content text)
returns integer
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_user_id uuid := private.require_project_member(p_project_id);
  v_version integer;
begin
  if p_name is null or p_name not in ('SOUL.md', 'AGENTS.md', 'COORDINATION.md') then
    perform private.raise_error(
      'invalid_request',
      'Persona file must be SOUL.md, AGENTS.md or COORDINATION.md'
    );
  end if;
  if p_content is null or octet_length(p_content) > 262144 then
    perform private.raise_error(
      'invalid_request',
      'Persona file content must be text of at most 256 KiB'
    );
  end if;
  -- Serialise saves of one project so versions are gapless and unique.
  perform 1 from public.projects where id = p_project_id for update;
  select coalesce(max(version), 0) + 1 into v_version
    from public.persona_file_versions where project_id = p_project_id and name = p_name;
  insert into public.persona_file_versions (project_id, name, version, content, created_by)
    values (p_project_id, p_name, v_version, p_content, v_user_id);
  perform private.enqueue_command(p_project_id, 'update_persona_files', jsonb_build_object(
    'name', p_name, 'version', v_version, 'content', p_content
  ), v_user_id);
  return v_version;
end;
$$;

grant execute on function private.save_persona_file(uuid, text, text) to authenticated;
