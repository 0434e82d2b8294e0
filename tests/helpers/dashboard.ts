/**
 * supabase-js clients against the local stack, as a dashboard makes them: the project URL and the
 * anon key, plus a signed-in user's access token, or the service_role key for operator tooling.
 */
import { createClient, type SupabaseClient } from "@supabase/supabase-js";
import { createDashboardClient, type DashboardClient } from "../../supabase/client/dashboard.ts";
import { mintApiKey, mintUserJwt } from "../../local/auth/jwt.ts";
import type { TestServer } from "./server.ts";

export const ANON_KEY = await mintApiKey("anon");
export const SERVICE_ROLE_KEY = await mintApiKey("service_role");

const NO_SESSION = { persistSession: false, autoRefreshToken: false, detectSessionInUrl: false };

/** Anonymous without `userId`, signed in as that user with one. */
async function signedIn(userId?: string) {
  const accessToken = userId ? await mintUserJwt(userId) : undefined;
  return {
    auth: NO_SESSION,
    ...(accessToken ? { accessToken: () => Promise.resolve(accessToken) } : {}),
  };
}

/** The dashboard's client (supabase/client/dashboard.ts), typed by the generated `Database`. */
export async function typedDashboardClient(
  server: TestServer,
  userId?: string,
): Promise<DashboardClient> {
  return createDashboardClient(server.origin, ANON_KEY, await signedIn(userId));
}

/**
 * An untyped client, for probing what the `Database` type rightly does not name (unexposed
 * schemas, unknown functions, relations listed at run time).
 */
export async function dashboardClient(
  server: TestServer,
  userId?: string,
): Promise<SupabaseClient> {
  return createClient(server.origin, ANON_KEY, await signedIn(userId));
}

/** Operator tooling with the service_role key (bypasses RLS, as on hosted). */
export function serviceClient(server: TestServer): SupabaseClient {
  return createClient(server.origin, SERVICE_ROLE_KEY, { auth: NO_SESSION });
}
