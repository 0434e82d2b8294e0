import assert from "node:assert/strict";
import { base64, base64url } from "../../supabase/functions/_shared/base64.ts";

Deno.test("base64() spells RFC 4648's test vectors, padded", () => {
  const vectors = ["", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"];
  vectors.forEach((expected, length) => assert.equal(base64("foobar".slice(0, length)), expected));
});

Deno.test("base64url() uses the URL-safe alphabet and drops the padding", () => {
  const bytes = new Uint8Array([0xfb, 0xff, 0xbf, 0xfe]);
  assert.equal(base64(bytes), "+/+//g==");
  assert.equal(base64url(bytes), "-_-__g");
});

Deno.test("base64() encodes a string as its UTF-8, which btoa alone refuses", () => {
  assert.throws(() => btoa("é€"));
  assert.equal(base64("é€"), "w6nigqw=");
  assert.equal(base64("é€"), base64(new TextEncoder().encode("é€")));
});
