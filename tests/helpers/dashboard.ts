/**
 * supabase-js clients against the local stack, as a dashboard makes them: the project URL and the
 * anon key, plus a signed-in user's access token, or the service_role key for operator tooling.
 */
import { createClient, type SupabaseClient } from "@supabase/supabase-js";
import { mintApiKey, mintUserJwt } from "../../scripts/lib/jwt.ts";
import type { TestServer } from "./server.ts";

export const ANON_KEY = await mintApiKey("anon");
export const SERVICE_ROLE_KEY = await mintApiKey("service_role");

const NO_SESSION = { persistSession: false, autoRefreshToken: false, detectSessionInUrl: false };

/** A dashboard client: anonymous without `userId`, signed in as that user with one. */
export async function dashboardClient(
  server: TestServer,
  userId?: string,
): Promise<SupabaseClient> {
  const accessToken = userId ? await mintUserJwt(userId) : undefined;
  return createClient(server.origin, ANON_KEY, {
    auth: NO_SESSION,
    ...(accessToken ? { accessToken: () => Promise.resolve(accessToken) } : {}),
  });
}

/** Operator tooling with the service_role key (bypasses RLS, as on hosted). */
export function serviceClient(server: TestServer): SupabaseClient {
  return createClient(server.origin, SERVICE_ROLE_KEY, { auth: NO_SESSION });
}
