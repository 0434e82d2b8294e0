/**
 * A call as the user (as_user.ts), against the real database: it runs as role `authenticated` with
 * the user's claims, and nothing of that outlives it; over the budget it is not made at all; a
 * call that fails still spends its hit.
 */
import assert from "node:assert/strict";
import { createTestDatabase } from "../../../tests/helpers/database.ts";
import { asUser } from "./as_user.ts";
import { ApiError } from "../_contract/errors.ts";

const USER = "7d3f5c2a-9b1e-4c8d-a6f0-1e2b3c4d5e6f";
const CLAIMS = { sub: USER, role: "authenticated" };

Deno.test("asUser: the call runs as the user, and only within the budget", async (t) => {
  await using db = await createTestDatabase();
  const { sql } = db;
  const hits = async (key: string) =>
    (await sql<{ hits: number }[]>`select hits from private.rate_limits where key = ${key}`)[0]
      ?.hits;

  await t.step("role authenticated and the user's claims, for this call only", async () => {
    const seen = await asUser<{ role: string; uid: string }>(
      sql,
      CLAIMS,
      (s) => s`jsonb_build_object('role', current_user, 'uid', auth.uid())`,
      { key: "test:as-user", limit: 10 },
    );
    assert.deepEqual(seen, { role: "authenticated", uid: USER });
    const after = await sql<{ role: string; claims: string | null }[]>`
      select current_user as role, nullif(current_setting('request.jwt.claims', true), '') as claims`;
    assert.deepEqual(after.map((r) => ({ ...r })), [{ role: "postgres", claims: null }]);
    assert.equal(await hits("test:as-user"), 1);
  });

  await t.step("over the budget the call is not made: 429", async () => {
    const budget = { key: "test:spent", limit: 1 };
    assert.equal(await asUser(sql, CLAIMS, (s) => s`1`, budget), 1);
    // A call that would fail if it ran.
    await assert.rejects(
      asUser(sql, CLAIMS, (s) => s`(1 / 0)`, budget),
      (error) => error instanceof ApiError && error.status === 429,
    );
    assert.equal(await hits("test:spent"), 2);
  });

  await t.step(
    "a call that fails still spends its hit; without a budget none is spent",
    async () => {
      const budget = { key: "test:failing", limit: 5 };
      await assert.rejects(asUser(sql, CLAIMS, (s) => s`(1 / 0)`, budget), /division by zero/);
      assert.equal(await hits("test:failing"), 1);
      assert.equal(await asUser(sql, CLAIMS, (s) => s`2`), 2);
      assert.equal(await hits("test:failing"), 1);
    },
  );
});
