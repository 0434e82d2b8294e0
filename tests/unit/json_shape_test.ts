import assert from "node:assert/strict";
import {
  findUnstorableText,
  jsonDepth,
  MAX_BODY_DEPTH,
} from "../../supabase/functions/_contract/json_shape.ts";
import { isUnavailability } from "../../supabase/functions/_shared/sql_errors.ts";

/** `{"a":{"a":...}}` nested `depth` levels, built without recursion. */
function nested(depth: number): unknown {
  let value: unknown = {};
  for (let i = 1; i < depth; i++) value = { a: value };
  return value;
}

Deno.test("jsonDepth() counts levels: scalars 0, {} and [] 1", () => {
  assert.equal(jsonDepth(7), 0);
  assert.equal(jsonDepth(null), 0);
  assert.equal(jsonDepth({}), 1);
  assert.equal(jsonDepth([[1], { a: [] }]), 3);
  assert.equal(jsonDepth(nested(64)), 64);
});

Deno.test("jsonDepth() stops at the limit instead of walking a hostile value whole", () => {
  assert.equal(jsonDepth(nested(65), MAX_BODY_DEPTH), Infinity);
  // Deeper than any recursive walk survives: the measure itself must not overflow the stack.
  assert.equal(jsonDepth(JSON.parse("[".repeat(500_000) + "]".repeat(500_000))), Infinity);
  assert.equal(jsonDepth(nested(200_000), 1_000_000), 200_000);
});

Deno.test("findUnstorableText() names the first field PostgreSQL cannot store", () => {
  assert.equal(findUnstorableText({ a: "ok", b: ["x", "bad\u0000"] }), "b.1");
  assert.equal(findUnstorableText({ ["k\u0000"]: 1 }), "k\u0000");
  assert.equal(findUnstorableText({ a: { b: "\ud800" }, c: "\u0000" }), "a.b");
  assert.equal(findUnstorableText("\u0000"), "");
  assert.equal(findUnstorableText({ a: [1, true, null, "fine"] }), undefined);
  assert.equal(findUnstorableText(nested(200_000)), undefined);
});

Deno.test("isUnavailability() tells an outage from a bug", () => {
  for (
    const code of [
      "ECONNREFUSED",
      "CONNECT_TIMEOUT",
      "CONNECTION_CLOSED",
      "CONNECTION_ENDED",
      "08006",
      "08P01",
      "53300",
      "57P01",
      "57P03",
      "57014",
      "55P03",
      "25006",
    ]
  ) {
    assert.equal(isUnavailability({ code, message: "x" }), true, code);
  }
  assert.equal(
    isUnavailability({
      code: "XX000",
      message: "(EDBHANDLEREXITED) connection to database closed",
    }),
    true,
  );
  assert.equal(
    isUnavailability({ code: "XX000", message: "Max client connections reached" }),
    true,
  );
  for (const code of ["42501", "42883", "23505", "22P02", "XX000", "P0001"]) {
    assert.equal(isUnavailability({ code, message: "x" }), false, code);
  }
  assert.equal(isUnavailability(new RangeError("Maximum call stack size exceeded")), false);
  assert.equal(isUnavailability(undefined), false);
});
