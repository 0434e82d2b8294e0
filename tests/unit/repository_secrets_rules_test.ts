/**
 * The rules of contract §10 that need no database: which repository URLs are taken (credentials
 * never, local paths only where ALLOW_LOCAL_REPOSITORY_URLS), branch names, secret names and
 * values, the setting's defaults, the one sealing key, and sealing itself (a sealed value opens
 * with its key only, and an altered one does not open).
 */
import assert from "node:assert/strict";
import {
  repositoryBranch,
  repositoryUrl,
  repositoryUrlProblem,
  secretName,
  secretValue,
} from "../../supabase/functions/_contract/fields.ts";
import { loadConfig } from "../../supabase/functions/_shared/config.ts";
import {
  decryptSecret,
  encryptSecret,
  fromHex,
  toHex,
} from "../../supabase/functions/_shared/sealing.ts";

const base = { DATABASE_URL: "postgres://u@127.0.0.1:5432/db" };
const SUBSCRIPTION = "11111111-2222-4333-8444-555555555555";
/** What COMPUTE_DRIVER=azure requires (see azure_config_and_mapping_test.ts). */
const AZURE_ENV = {
  AZURE_TENANT_ID: "tenant",
  AZURE_CLIENT_ID: "client",
  AZURE_CLIENT_SECRET: "secret",
  AZURE_SUBSCRIPTION_ID: SUBSCRIPTION,
  AZURE_RESOURCE_GROUP: "rg-agents",
  AZURE_SUBNET_ID: `/subscriptions/${SUBSCRIPTION}/resourceGroups/rg-net/providers/` +
    "Microsoft.Network/virtualNetworks/vnet/subnets/vms",
  AZURE_VM_IMAGE: "Canonical:ubuntu-24_04-lts:server:latest",
  AZURE_ADMIN_USERNAME: "agent",
  AZURE_SSH_PUBLIC_KEY: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBv1 ops@example",
  REPORTER_PUBLIC_URL: "https://abc.supabase.co/functions/v1/vm-reporter",
};
const CREDENTIAL = "must not carry a credential: store the token as the project secret GIT_TOKEN " +
  "instead";

Deno.test("repository URLs: https, ssh and scp-like are taken everywhere", () => {
  for (
    const url of [
      "https://github.com/acme/app.git",
      "https://dev.azure.com/acme/project/_git/app",
      "ssh://git@github.com/acme/app.git",
      "ssh://git@github.com:2222/acme/app.git",
      "git@github.com:acme/app.git",
      "github.com:acme/app.git",
    ]
  ) {
    assert.equal(repositoryUrlProblem(url, false), undefined, url);
    assert.equal(repositoryUrlProblem(url, true), undefined, url);
  }
});

Deno.test("repository URLs: file:// and absolute paths only where local URLs are allowed", () => {
  for (const url of ["file:///srv/repos/app", "file://localhost/srv/repos/app", "/srv/repos/app"]) {
    assert.equal(repositoryUrlProblem(url, true), undefined, url);
    assert.match(repositoryUrlProblem(url, false)!, /for the local stack only/, url);
  }
  assert.match(repositoryUrlProblem("file://elsewhere/srv/app", true)!, /on this machine/);
});

Deno.test("repository URLs: any credential is refused, and never part of the sentence", () => {
  const secret = "ghp_0123456789abcdef";
  for (
    const url of [
      `https://user:${secret}@github.com/acme/app.git`,
      `https://${secret}@github.com/acme/app.git`,
      `https://x-access-token:${secret}@github.com/acme/app.git`,
      `HTTPS://${secret}@github.com/acme/app.git`,
      `http://user:${secret}@github.com/acme/app.git`,
      `ssh://git:${secret}@github.com/acme/app.git`,
      `git:${secret}@github.com:acme/app.git`,
      `https://:${secret}@github.com/acme/app.git`,
    ]
  ) {
    for (const allowLocal of [true, false]) {
      assert.equal(repositoryUrlProblem(url, allowLocal), CREDENTIAL, url);
    }
    const parsed = repositoryUrl.safeParse(url);
    assert.ok(!parsed.success);
    assert.ok(!JSON.stringify(parsed.error.issues).includes(secret), url);
  }
});

Deno.test("repository URLs: what git cannot clone, or could be tricked by, is refused", () => {
  const cases: [string, RegExp][] = [
    ["http://github.com/acme/app.git", /must be a repository URL git can clone/],
    ["git://github.com/acme/app.git", /must be a repository URL git can clone/],
    ["relative/path", /must be a repository URL git can clone/],
    ["https://github.com", /path on its host/],
    ["https://github.com/acme/app.git?token=x", /query or a fragment/],
    ["https://github.com/acme/app.git#main", /query or a fragment/],
    ["ssh://-oProxyCommand=touch%20x/app", /host/],
    ["git@host:-oProxyCommand=x", /must be a repository URL git can clone/],
    ["https://github.com/acme/app.git\n", /spaces or control characters/],
    ["https://github.com/ac me/app.git", /spaces or control characters/],
  ];
  for (const [url, message] of cases) assert.match(repositoryUrlProblem(url, true)!, message, url);
  assert.ok(!repositoryUrl.safeParse("x".repeat(2001)).success);
});

Deno.test("branch names: what git takes, never an option", () => {
  for (const branch of ["main", "develop", "feature/login", "release-1.2", "fix_3+4", "A/b.c"]) {
    assert.ok(repositoryBranch.safeParse(branch).success, branch);
  }
  for (
    const branch of [
      "",
      "-x",
      "--upload-pack=evil",
      ".hidden",
      "/lead",
      "trail/",
      "dot.",
      "a..b",
      "a//b",
      "a/.b",
      "x.lock",
      "x.lock/y",
      "sp ace",
      "a~1",
      "a^",
      "a:b",
      "a@{1}",
      "b".repeat(256),
    ]
  ) {
    assert.ok(!repositoryBranch.safeParse(branch).success, branch);
  }
});

Deno.test("secret names and values", () => {
  for (const name of ["GIT_TOKEN", "A", `A${"_".repeat(63)}`, "ANTHROPIC_API_KEY", "K8S_2"]) {
    assert.ok(secretName.safeParse(name).success, name);
  }
  for (const name of ["", "git_token", "1A", "_A", "A-B", "A B", `A${"B".repeat(64)}`, "Ä"]) {
    assert.ok(!secretName.safeParse(name).success, name);
  }
  assert.ok(secretValue.safeParse("x".repeat(65_536)).success);
  assert.ok(secretValue.safeParse("€".repeat(21_845)).success, "65535 bytes");
  assert.ok(!secretValue.safeParse("€".repeat(21_846)).success, "65538 bytes, 21846 characters");
  assert.ok(!secretValue.safeParse("").success);
  assert.ok(!secretValue.safeParse(7).success);
});

Deno.test("ALLOW_LOCAL_REPOSITORY_URLS: on with the local driver, off with azure, settable", () => {
  assert.equal(loadConfig(base).repositories.allowLocalUrls, true);
  assert.equal(
    loadConfig({ ...base, COMPUTE_DRIVER: "azure", ...AZURE_ENV }).repositories.allowLocalUrls,
    false,
  );
  assert.equal(
    loadConfig({ ...base, ALLOW_LOCAL_REPOSITORY_URLS: "false" }).repositories.allowLocalUrls,
    false,
  );
  assert.equal(
    loadConfig({
      ...base,
      COMPUTE_DRIVER: "azure",
      ...AZURE_ENV,
      ALLOW_LOCAL_REPOSITORY_URLS: "true",
    })
      .repositories.allowLocalUrls,
    true,
  );
  assert.throws(() => loadConfig({ ...base, ALLOW_LOCAL_REPOSITORY_URLS: "yes" }));
});

Deno.test("one sealing key: WEBHOOK_SECRET_KEY's, the local stack's fixed one, none hosted", () => {
  const local = loadConfig(base);
  assert.equal(local.sealingKey?.length, 32);
  assert.deepEqual(local.sealingKey, local.webhooks.secretKey);
  const hosted = {
    ...base,
    SUPABASE_URL: "https://abc.supabase.co",
    SUPABASE_ANON_KEY: "anon-key",
    COMPUTE_DRIVER: "azure",
    ...AZURE_ENV,
  };
  assert.ok(!("sealingKey" in loadConfig(hosted)));
  const key = btoa(String.fromCharCode(...new Uint8Array(32).fill(9)));
  assert.deepEqual(
    loadConfig({ ...hosted, WEBHOOK_SECRET_KEY: key }).sealingKey,
    new Uint8Array(32).fill(9),
  );
});

Deno.test("a sealed value opens with its key only, and not once altered", async () => {
  const key = crypto.getRandomValues(new Uint8Array(32));
  const value = "sk-ant-ünïcödé-😀";
  const sealed = await encryptSecret(key, value);
  assert.equal(sealed.byteLength, 12 + new TextEncoder().encode(value).byteLength + 16);
  assert.ok(!new TextDecoder().decode(sealed).includes(value));
  assert.notDeepEqual(await encryptSecret(key, value), sealed, "a fresh IV every time");
  assert.equal(await decryptSecret(key, fromHex(toHex(sealed))), value);
  await assert.rejects(decryptSecret(crypto.getRandomValues(new Uint8Array(32)), sealed));
  const altered = new Uint8Array(sealed);
  altered[20]! ^= 1;
  await assert.rejects(decryptSecret(key, altered));
});
