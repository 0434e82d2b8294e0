/** Rows the tests need, inserted as the superuser the way the account system would. */
import { newReporterToken } from "../../supabase/functions/_shared/reporter_token.ts";
import type postgres from "postgres";

export async function createUser(sql: postgres.Sql, email?: string): Promise<string> {
  const id = crypto.randomUUID();
  await sql`insert into auth.users (id, email) values (${id}, ${email ?? `${id}@example.test`})`;
  return id;
}

export async function createOrganization(
  sql: postgres.Sql,
  members: string[] = [],
  name = "Acme",
): Promise<string> {
  const [org] = await sql<[{ id: string }]>`
    insert into public.organizations (name) values (${name}) returning id`;
  for (const userId of members) {
    await sql`
      insert into public.organization_members (organization_id, user_id, role)
      values (${org.id}, ${userId}, 'member')`;
  }
  return org.id;
}

export async function createProject(
  sql: postgres.Sql,
  organizationId: string,
  members: string[] = [],
  fields: { status?: string; name?: string } = {},
): Promise<string> {
  const [project] = await sql<[{ id: string }]>`
    insert into public.projects (organization_id, name, status)
    values (${organizationId}, ${fields.name ?? "Project"}, ${fields.status ?? "active"})
    returning id`;
  for (const userId of members) {
    await sql`
      insert into public.project_members (project_id, user_id, role)
      values (${project.id}, ${userId}, 'owner')`;
  }
  return project.id;
}

/** Issues a reporter token for the project the way operators do; returns the plaintext. */
export async function issueReporterToken(
  sql: postgres.Sql,
  projectId: string,
  overlap = "24 hours",
): Promise<string> {
  const token = await newReporterToken();
  await sql`
    select private.issue_reporter_token(${projectId}, ${token.hash}, 'operator', ${overlap}::interval)`;
  return token.plaintext;
}
