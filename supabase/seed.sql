-- Local data to start from, as `supabase/seed.sql` is for the Supabase CLI: applied to a fresh
-- local database (first `deno task start`, every `deno task reset`), never to a hosted one.
-- A demo user in a demo organization, so the README's curl and supabase-js examples work as they
-- are: `deno task jwt` (no argument) prints this user's token, and the dashboard signs in with
-- demo@example.test / demo-password (a bcrypt hash, as Supabase Auth stores passwords).

insert into auth.users (id, email, encrypted_password, email_confirmed_at, aud, role)
values (
  '00000000-0000-4000-8000-000000000001', 'demo@example.test',
  extensions.crypt('demo-password', extensions.gen_salt('bf')), now(), 'authenticated',
  'authenticated'
)
on conflict (id) do nothing;

insert into public.organizations (id, name)
values ('00000000-0000-4000-8000-0000000000aa', 'Demo organization')
on conflict (id) do nothing;

insert into public.organization_members (organization_id, user_id, role)
values ('00000000-0000-4000-8000-0000000000aa', '00000000-0000-4000-8000-000000000001', 'owner')
on conflict (organization_id, user_id) do nothing;
