/*
 * private.is_transitional as an SQL-standard body (`return ...`): PostgreSQL inlines it into the
 * query that calls it, where the PL/pgSQL version with its own search_path was a function call
 * with a settings switch on every evaluation (about a fifth of vm_status's query under `deno task
 * bench`). The body is parsed here, at creation, so its operators are resolved once, whatever a
 * caller's search_path. Same statuses, so public.projects_transitional_idx (defined with it) keeps
 * its rows; it is rebuilt anyway, as the function's header comment asks of any change to it.
 */
create or replace function private.is_transitional(p_status text) returns boolean
language sql
immutable
parallel safe
return p_status in ('provisioning', 'starting', 'stopping', 'deleting');

reindex index public.projects_transitional_idx;
