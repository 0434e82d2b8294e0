-- Broadcast from Database (contract §14): each event to its private Realtime channels, and who may
-- join them. As supabase/schemas/18_realtime.sql (new).

/**
 * Sends the event to its channels: its project's (when it is about one) and its organization's.
 * `realtime.send` never fails the transaction (an error is a warning and the message is lost), so
 * the change and its event commit whatever Realtime's table holds. Security definer: the change
 * may be a user's, and `realtime.messages` has no insert policy for them.
 */
create or replace function private.broadcast_event()
returns trigger
language plpgsql
security definer
set search_path = ''
as $$
declare
  v_payload jsonb := jsonb_build_object(
    'id', new.id, 'type', new.type, 'organization_id', new.organization_id,
    'project_id', new.project_id, 'data', new.data, 'occurred_at', new.occurred_at);
begin
  if new.project_id is not null then
    perform realtime.send(v_payload, new.type, 'project:' || new.project_id, true);
  end if;
  perform realtime.send(v_payload, new.type, 'organization:' || new.organization_id, true);
  return null;
end;
$$;

do $$
begin
  if to_regprocedure('realtime.send(jsonb, text, text, boolean)') is not null then
    create trigger events_broadcast
      after insert on public.events
      for each row execute function private.broadcast_event();
  end if;

  if to_regclass('realtime.messages') is not null then
    create policy "Project members receive their projects' events"
      on realtime.messages for select
      to authenticated
      using (
        extension = 'broadcast'
        and case
          -- CASE, not AND: the id is cast only once the topic is known to hold one.
          when (select realtime.topic()) ~* '^project:[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}$'
            then (select private.is_project_member(substring((select realtime.topic()) from 9)::uuid))
          else false
        end
      );

    create policy "Organization owners and admins receive all of their organization's events"
      on realtime.messages for select
      to authenticated
      using (
        extension = 'broadcast'
        and case
          when (select realtime.topic()) ~* '^organization:[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}$'
            then (select private.is_organization_admin(
              substring((select realtime.topic()) from 14)::uuid))
          else false
        end
      );
  end if;
end
$$;
