/*
 * Live by push (contract §14): Broadcast from Database into private Realtime channels.
 *
 * Every event of the log (14_events.sql) is sent, in the transaction that records it, to the
 * private channels `project:<project_id>` (a project's events) and `organization:<organization_id>`
 * (all of the organization's events), with `realtime.send`: the broadcast's `event` is the event
 * type, its payload the event row. Hosted, Supabase Realtime owns the `realtime` schema (its
 * messages table, `realtime.send`, `realtime.topic()`) and delivers the messages; locally the base
 * objects (local/database/supabase_base.sql) create the same and the local Realtime server delivers them.
 * This file adds only what is ours: the trigger and the policies on `realtime.messages` that decide
 * who may join which channel. Both are created only where the `realtime` schema exists, so a
 * PostgreSQL without Supabase Realtime keeps working without them.
 *
 * Who may join (Realtime checks a private channel's join by selecting a probe row of
 * `realtime.messages` as the user, with `realtime.topic()` set to the channel's topic):
 *   - `project:<id>`: the project's members, who read its events (public.events' policy);
 *   - `organization:<id>`: the organization's owners and admins. The channel carries every event of
 *     the organization, those of projects a plain member does not belong to included; owners and
 *     admins already receive all of them through the organization's webhooks. A plain member
 *     subscribes to the channels of their projects.
 */

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
