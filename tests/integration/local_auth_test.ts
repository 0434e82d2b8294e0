/**
 * The local sign-in, driven by supabase-js's own auth client against `deno task start`: the seed's
 * demo user signs in with a password, sessions refresh and end as Supabase Auth's do, and the
 * tokens it issues are what vm-api and the Data API accept.
 */
import assert from "node:assert/strict";
import { AuthApiError, createClient } from "@supabase/supabase-js";
import { seed } from "../../local/database/seed.ts";
import { ANON_KEY } from "../helpers/dashboard.ts";
import { createTestDatabase } from "../helpers/database.ts";
import { startServer } from "../helpers/server.ts";

const DEMO = { email: "demo@example.test", password: "demo-password" };
const noStorage = { auth: { persistSession: false, autoRefreshToken: false } };

Deno.test("local sign-in: Supabase Auth's password and refresh-token grants, user and logout", async (t) => {
  await using db = await createTestDatabase();
  await seed(db.url);
  await using server = await startServer(db.url, { LOCAL_AUTH_JWT_EXPIRY_SECONDS: "2" });
  const client = () => createClient(server.origin, ANON_KEY, noStorage);

  await t.step("the demo user signs in with the seed's password", async () => {
    const { data, error } = await client().auth.signInWithPassword(DEMO);
    assert.equal(error, null);
    assert.equal(data.user?.email, DEMO.email);
    assert.equal(data.session?.token_type, "bearer");
    assert.equal(data.session?.expires_in, 2);
  });

  await t.step("the password is stored as a bcrypt hash, never in clear", async () => {
    const [user] = await db
      .sql`select encrypted_password from auth.users where email = ${DEMO.email}`;
    assert.match(user!.encrypted_password, /^\$2[aby]\$\d\d\$/);
  });

  await t.step(
    "a wrong password, or an unknown user: Supabase Auth's 400 and message",
    async () => {
      for (const attempt of [{ ...DEMO, password: "wrong" }, { ...DEMO, email: "nobody@x.test" }]) {
        const { data, error } = await client().auth.signInWithPassword(attempt);
        assert.ok(error instanceof AuthApiError);
        assert.equal(error.status, 400);
        assert.equal(error.code, "invalid_credentials");
        assert.equal(error.message, "Invalid login credentials");
        assert.equal(data.session, null);
      }
    },
  );

  await t.step("its access token is what vm-api and the Data API accept", async () => {
    const supabase = client();
    await supabase.auth.signInWithPassword(DEMO);
    const { data: orgs, error } = await supabase.from("organizations").select("name");
    assert.equal(error, null);
    assert.deepEqual(orgs, [{ name: "Demo organization" }]);
    const { error: vmError } = await supabase.functions.invoke("vm-api", {
      body: { action: "status", project_id: crypto.randomUUID() },
    });
    // Authenticated (not 401): the project is simply not the user's.
    assert.equal((vmError as { context: Response }).context.status, 403);
  });

  await t.step(
    "sessions expire, refresh with a single-use token, and reuse is refused",
    async () => {
      const supabase = client();
      const { data } = await supabase.auth.signInWithPassword(DEMO);
      const first = data.session!;
      await new Promise((resolve) => setTimeout(resolve, 2_500));
      const expired = await client().auth.getUser(first.access_token);
      assert.ok(expired.error instanceof AuthApiError);
      assert.equal(expired.error.status, 403);
      assert.equal(expired.error.code, "bad_jwt");

      const refreshed = await supabase.auth.refreshSession({ refresh_token: first.refresh_token });
      assert.equal(refreshed.error, null);
      assert.notEqual(refreshed.data.session!.refresh_token, first.refresh_token);
      const { data: orgs } = await supabase.from("organizations").select("name");
      assert.equal(orgs?.length, 1, "the refreshed session reads again");

      // Within Supabase Auth's reuse interval (10 s) a spent token still works: age it past that.
      await db.sql`update auth.refresh_tokens set updated_at = now() - interval '1 minute'
        where revoked`;
      const reused = await client().auth.refreshSession({ refresh_token: first.refresh_token });
      assert.ok(reused.error instanceof AuthApiError);
      assert.equal(reused.error.status, 400);
      assert.equal(reused.error.code, "refresh_token_already_used");
    },
  );

  await t.step("getUser answers for a live session; after logout it is refused", async () => {
    const supabase = client();
    const { data } = await supabase.auth.signInWithPassword(DEMO);
    const token = data.session!.access_token;
    const user = await supabase.auth.getUser(token);
    assert.equal(user.data.user?.email, DEMO.email);
    const { error } = await supabase.auth.signOut();
    assert.equal(error, null);
    const after = await fetch(`${server.origin}/auth/v1/user`, {
      headers: { apikey: ANON_KEY, authorization: `Bearer ${token}` },
    });
    assert.equal(after.status, 403);
    assert.equal((await after.json()).error_code, "session_not_found");
    // supabase-js reads that code as a session that is gone.
    const { data: gone, error: goneError } = await client().auth.getUser(token);
    assert.equal(gone.user, null);
    assert.equal(goneError?.name, "AuthSessionMissingError");
    const refresh = await client().auth.refreshSession({
      refresh_token: data.session!.refresh_token,
    });
    assert.ok(refresh.error, "the ended session's refresh token is refused");
  });

  await t.step("without an API key the gateway refuses, as hosted", async () => {
    const response = await fetch(`${server.origin}/auth/v1/token?grant_type=password`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(DEMO),
    });
    assert.equal(response.status, 401);
    await response.body?.cancel();
  });

  await t.step("nothing of a password or token reaches the server's log", () => {
    assert.ok(!server.output().includes(DEMO.password));
  });
});
