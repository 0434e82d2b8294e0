/**
 * One list of error codes for TypeScript and SQL: private.error_codes() is the contract's list
 * (_contract/errors.ts) row for row, every code the schema raises is on it, and a raised error
 * reaches a function's caller as that code with its status.
 */
import assert from "node:assert/strict";
import { ERROR_CODES } from "../../supabase/functions/_contract/errors.ts";
import { apiErrorFromSql } from "../../supabase/functions/_shared/sql_errors.ts";
import { listSchemaFiles } from "../helpers/declarative_schemas.ts";
import { createTestDatabase } from "../helpers/database.ts";

Deno.test("private.error_codes() holds the contract's error codes, each with its status", async () => {
  await using db = await createTestDatabase();
  const rows = await db.sql<{ code: string; status: number }[]>`
    select code, status from private.error_codes()`;
  assert.deepEqual(
    rows.map((row) => [row.code, row.status]),
    Object.entries(ERROR_CODES).map(([code, info]) => [code, info.status]),
  );
});

Deno.test("every code the schema raises is a contract error code", async () => {
  const raised = new Set<string>();
  for (const file of await listSchemaFiles()) {
    const text = await Deno.readTextFile(file);
    for (const match of text.matchAll(/private\.raise_error\(\s*'(\w+)'/g)) raised.add(match[1]!);
    // A bare VA error would reach callers without a code.
    assert.doesNotMatch(text, /errcode\s*=\s*'VA\d{3}'/, file.pathname);
  }
  assert.ok(raised.size >= 10, `found ${raised.size} codes raised`);
  for (const code of raised) {
    assert.ok(code in ERROR_CODES, `${code} is not in _contract/errors.ts`);
  }
});

Deno.test("private.raise_error() raises VA<status> with the code a function answers", async (t) => {
  await using db = await createTestDatabase();
  await t.step("a known code", async () => {
    const error = await db
      .sql`select private.raise_error('approval_expired', 'This approval has expired')`
      .then(() => undefined, (e: unknown) => e);
    assert.equal((error as { code?: string }).code, "VA409");
    const answer = apiErrorFromSql(error);
    assert.equal(answer?.code, "approval_expired");
    assert.equal(answer?.status, 409);
    assert.equal(answer?.message, "This approval has expired");
  });
  await t.step("an unknown code is a bug, not a caller's error", async () => {
    const error = await db.sql`select private.raise_error('no_such_code', 'x')`
      .then(() => undefined, (e: unknown) => e);
    assert.match((error as Error).message, /unknown error code no_such_code/);
    assert.equal(apiErrorFromSql(error), undefined);
  });
});
