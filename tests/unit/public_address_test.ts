import assert from "node:assert/strict";
import { isPublicAddress } from "../../supabase/functions/_shared/webhooks/public_address.ts";

Deno.test("public addresses pass", () => {
  for (
    const address of [
      "8.8.8.8",
      "1.1.1.1",
      "93.184.216.34",
      "172.32.0.1",
      "100.128.0.1",
      "2606:4700:4700::1111",
      "2a00:1450:4001:81b::200e",
      "::ffff:8.8.8.8",
      "64:ff9b::808:808",
      "2002:808:808::1",
    ]
  ) assert.equal(isPublicAddress(address), true, address);
});

Deno.test("private, loopback, link-local, unique-local, metadata and reserved are refused", () => {
  for (
    const address of [
      "127.0.0.1",
      "127.255.255.254",
      "10.1.2.3",
      "172.16.0.1",
      "172.31.255.255",
      "192.168.1.1",
      "169.254.169.254",
      "100.64.0.1",
      "0.0.0.0",
      "224.0.0.1",
      "255.255.255.255",
      "198.18.0.1",
      "::",
      "::1",
      "fe80::1",
      "fe80::1%eth0",
      "fc00::1",
      "fd00:ec2::254",
      "ff02::1",
      "2001:db8::1",
      "::ffff:127.0.0.1",
      "::ffff:7f00:1",
      "::ffff:169.254.169.254",
      "::ffff:10.0.0.1",
      "::127.0.0.1",
      "64:ff9b::7f00:1",
      "2002:7f00:1::",
      "2002:a9fe:a9fe::1",
      "not an address",
      "",
    ]
  ) assert.equal(isPublicAddress(address), false, address);
});
