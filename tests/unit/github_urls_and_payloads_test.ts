/**
 * The GitHub App's pure parts: which repository URLs are GitHub projects (contract §16), the
 * webhook signature github-webhooks checks, the payload shapes it reads, and the pause GitHub's
 * refusals ask for.
 */
import assert from "node:assert/strict";
import { sign, verify } from "@octokit/webhooks-methods";
import {
  githubRepositoryOf,
  repositoryKey,
} from "../../supabase/functions/_shared/github/repository.ts";
import { pauseOf } from "../../supabase/functions/_shared/github/pacing.ts";
import { readPayload } from "../../supabase/functions/_shared/github/webhook_payloads.ts";

Deno.test("githubRepositoryOf() reads owner and repo from a URL on GITHUB_WEB_URL", () => {
  const web = "https://github.com";
  assert.deepEqual(githubRepositoryOf("https://github.com/acme/app", web), {
    owner: "acme",
    repo: "app",
  });
  assert.deepEqual(githubRepositoryOf("https://github.com/acme/app.git", web), {
    owner: "acme",
    repo: "app",
  });
  assert.deepEqual(githubRepositoryOf("https://GitHub.com/Acme/my.app/", web), {
    owner: "Acme",
    repo: "my.app",
  });
  assert.deepEqual(
    githubRepositoryOf("http://127.0.0.1:4567/demo-owner/app.git", "http://127.0.0.1:4567"),
    { owner: "demo-owner", repo: "app" },
    "a local stand-in's own scheme",
  );
  assert.deepEqual(
    githubRepositoryOf("https://ghe.example.com/git/acme/app", "https://ghe.example.com/git/"),
    { owner: "acme", repo: "app" },
    "a web URL with a path",
  );
});

Deno.test("githubRepositoryOf() answers null for anything else", () => {
  const web = "https://github.com";
  for (
    const url of [
      null,
      undefined,
      "",
      "git@github.com:acme/app.git",
      "ssh://git@github.com/acme/app.git",
      "http://github.com/acme/app",
      "https://gitlab.com/acme/app",
      "https://github.com.evil.test/acme/app",
      "https://github.com/acme",
      "https://github.com/acme/app/tree/main",
      "https://github.com/acme/app?x=1",
      "https://github.com/acme/app#readme",
      "https://user@github.com/acme/app",
      "https://github.com/-acme/app",
      "https://github.com/acme/..",
      "file:///srv/acme/app",
    ]
  ) {
    assert.equal(githubRepositoryOf(url, web), null, String(url));
  }
  assert.equal(
    githubRepositoryOf("http://127.0.0.1:4568/demo-owner/app", "http://127.0.0.1:4567"),
    null,
    "another port",
  );
});

Deno.test("repositoryKey() is owner/repo in lower case", () => {
  assert.equal(repositoryKey({ owner: "Acme", repo: "App.Js" }), "acme/app.js");
});

Deno.test("the webhook signature verifies the exact body with the secret, and nothing else", async () => {
  const body = JSON.stringify({ action: "created", installation: { id: 1 } });
  const signature = await sign("s3cret", body);
  assert.match(signature, /^sha256=[0-9a-f]{64}$/);
  assert.equal(await verify("s3cret", body, signature), true);
  assert.equal(await verify("other", body, signature), false);
  assert.equal(await verify("s3cret", body + " ", signature), false);
  assert.equal(await verify("s3cret", body, signature.replace(/.$/, "0")), signature.endsWith("0"));
});

Deno.test("readPayload() takes the facts of a payload, or says what is wrong with it", () => {
  assert.deepEqual(
    readPayload("installation", {
      action: "created",
      installation: { id: 9, account: { login: "acme" } },
      repositories: [{ full_name: "acme/app" }],
    }),
    { ok: true, facts: { action: "created", repository: null, installationId: 9 } },
  );
  assert.deepEqual(
    readPayload("issues", {
      action: "opened",
      repository: { full_name: "acme/app" },
      installation: { id: 9 },
    }),
    { ok: true, facts: { action: "opened", repository: "acme/app", installationId: 9 } },
  );
  assert.deepEqual(readPayload("ping", { zen: "Design for failure." }), {
    ok: true,
    facts: { action: null, repository: null, installationId: null },
  });
  const noInstallation = readPayload("installation", { action: "created" });
  assert.equal(noInstallation.ok, false);
  assert.match(!noInstallation.ok ? noInstallation.problem : "", /installation/);
  assert.equal(readPayload("push", { ref: "refs/heads/main" }).ok, false, "push has a repository");
  assert.equal(readPayload("issues", [1, 2]).ok, false);
});

Deno.test("pauseOf() reads the wait GitHub asks for after a refusal", () => {
  const refusal = (status: number, headers: Record<string, string>) => ({
    status,
    response: { headers },
  });
  const now = 1_000_000_000_000;
  assert.equal(pauseOf(refusal(403, { "retry-after": "30" }), now), 30);
  assert.equal(pauseOf(refusal(429, { "retry-after": "2" }), now), 2);
  assert.equal(
    pauseOf(
      refusal(403, { "x-ratelimit-remaining": "0", "x-ratelimit-reset": String(now / 1000 + 45) }),
      now,
    ),
    45,
  );
  assert.equal(pauseOf(refusal(429, {}), now), 60, "GitHub: wait at least a minute");
  assert.equal(pauseOf(refusal(403, {}), now), undefined, "a refusal for want of permission");
  assert.equal(pauseOf(refusal(500, { "retry-after": "5" }), now), undefined);
  assert.equal(pauseOf(new Error("network"), now), undefined);
});
