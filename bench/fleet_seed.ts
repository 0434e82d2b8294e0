/**
 * A fleet for the bench and the soak: `count` active projects in one organization, each with an
 * owner of its own (a fleet's dashboard users are as many as its projects) and a session for that
 * owner; one more user belongs to the organization and every project. What a VM presents (a
 * reporter token, a bootstrap credential) is the caller's to add.
 */
import type postgres from "postgres";
import { mintUserJwt } from "../local/auth/jwt.ts";

export interface SeededProject {
  id: string;
  owner: string;
  /** A session of the project's own owner. */
  ownerJwt: string;
}

export interface SeededFleet {
  /** Member of the organization and of every project. */
  user: string;
  organization: string;
  projects: SeededProject[];
}

const BATCH = 500;

export async function seedFleet(
  sql: postgres.Sql,
  count: number,
  label: string,
): Promise<SeededFleet> {
  const user = crypto.randomUUID();
  await sql`insert into auth.users (id, email) values (${user}, ${`${user}@${label}.test`})`;
  const [{ id: organization }] = await sql<[{ id: string }]>`
    insert into public.organizations (name) values (${label}) returning id`;
  await sql`
    insert into public.organization_members (organization_id, user_id)
    values (${organization}, ${user})`;
  const projects: SeededProject[] = [];
  for (let offset = 0; offset < count; offset += BATCH) {
    const size = Math.min(BATCH, count - offset);
    const ids = Array.from({ length: size }, () => crypto.randomUUID());
    const owners = Array.from({ length: size }, () => crypto.randomUUID());
    await sql`
      insert into public.projects (id, organization_id, name, status, health_status)
      select id, ${organization}, ${label}, 'active', 'healthy' from unnest(${ids}::uuid[]) id`;
    await sql`
      insert into auth.users (id, email)
      select o, o || ${`@${label}.test`} from unnest(${owners}::uuid[]) o`;
    await sql`
      insert into public.project_members (project_id, user_id, role)
      select id, ${user}, 'owner' from unnest(${ids}::uuid[]) id
      union all
      select p, o, 'owner' from unnest(${ids}::uuid[], ${owners}::uuid[]) as t (p, o)`;
    for (let i = 0; i < size; i++) {
      projects.push({ id: ids[i]!, owner: owners[i]!, ownerJwt: await mintUserJwt(owners[i]!) });
    }
  }
  return { user, organization, projects };
}
