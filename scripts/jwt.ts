/**
 * `deno task jwt [user_id]`: prints an HS256 user token signed with AUTH_JWT_SECRET (alias
 * SUPABASE_JWT_SECRET; default: the local secret), valid for an hour (JWT_EXPIRES_IN seconds to
 * change it). Without a user id, the token of the seed's demo user.
 */
import { mintUserJwt } from "../local/auth/jwt.ts";
import { DEMO_USER_EMAIL, DEMO_USER_ID } from "../local/database/seed.ts";
import { isUuid } from "../supabase/functions/_shared/uuid.ts";

const userId = Deno.args[0] ?? DEMO_USER_ID;
if (!isUuid(userId)) {
  console.error("Usage: deno task jwt [user_id]   (user_id is the UUID of a row in auth.users)");
  Deno.exit(2);
}
// The names the functions read (contract §1), hosted's settable one first.
const secret = Deno.env.get("AUTH_JWT_SECRET") ?? Deno.env.get("SUPABASE_JWT_SECRET");
const issuer = Deno.env.get("AUTH_JWT_ISSUER") ?? Deno.env.get("SUPABASE_JWT_ISSUER");
const expiresIn = Number(Deno.env.get("JWT_EXPIRES_IN") ?? 3600);
console.log(
  await mintUserJwt(userId, {
    expiresIn,
    ...(userId === DEMO_USER_ID ? { email: DEMO_USER_EMAIL } : {}),
    ...(secret ? { secret } : {}),
    ...(issuer ? { issuer } : {}),
  }),
);
