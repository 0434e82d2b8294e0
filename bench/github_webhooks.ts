/**
 * `deno task github-webhooks`: how many deliveries a second `github-webhooks` takes while keeping
 * its promise (contract §16: verified, recorded, answered 202 at once — GitHub gives a receiver 10
 * seconds), against the real server (scripts/start.ts, with the stack's GitHub stand-in off) on a
 * throw-away cluster: HOOKS_CONCURRENCY clients (default 16) for HOOKS_SECONDS (default 5) send
 * signed `issue_comment` deliveries, each with a delivery id of its own, for repositories no project
 * names (recorded, then ignored after the answer, as most of a busy App's traffic is).
 */
import { sign } from "@octokit/webhooks-methods";
import { startThrowawayDatabase } from "../local/database/throwaway_database.ts";
import { spawnService } from "../local/host/spawn_service.ts";

const CONCURRENCY = Number(Deno.env.get("HOOKS_CONCURRENCY") ?? 16);
const SECONDS = Number(Deno.env.get("HOOKS_SECONDS") ?? 5);
const SECRET = "bench-webhook-secret";
const say = (line: string) => console.error(`[github-webhooks] ${line}`);

const database = await startThrowawayDatabase("github_webhooks_bench", say);
try {
  // A service with an App's settings (a GitHub API nobody calls: no delivery names a project).
  const { privateKey } = await generateKey();
  await using service = await spawnService(new URL("../scripts/start.ts", import.meta.url), {
    DATABASE_URL: database.url,
    LOG_LEVEL: "warn",
    RECONCILE_INTERVAL_MS: "3600000",
    GITHUB_APP_ID: "1",
    GITHUB_APP_PRIVATE_KEY: privateKey,
    GITHUB_APP_SLUG: "bench",
    GITHUB_WEBHOOK_SECRET: SECRET,
    GITHUB_API_URL: "http://127.0.0.1:9/api/v3",
    GITHUB_WEB_URL: "http://127.0.0.1:9",
  });
  const url = `${service.origin}/functions/v1/github-webhooks`;
  const latencies: number[] = [];
  const statuses = new Map<number, number>();
  const deadline = performance.now() + SECONDS * 1000;
  await Promise.all(Array.from({ length: CONCURRENCY }, async (_, client) => {
    let n = 0;
    while (performance.now() < deadline) {
      const body = JSON.stringify({
        action: "created",
        issue: { number: 1, title: "t", body: "b", labels: [] },
        comment: { id: n, body: "hello", user: { login: "someone" }, author_association: "NONE" },
        repository: {
          id: client,
          name: `r${client}`,
          full_name: `nobody/r${client}`,
          owner: { login: "nobody" },
        },
        sender: { login: "someone", type: "User" },
        installation: { id: 1 },
      });
      n++;
      const started = performance.now();
      const answer = await fetch(url, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "x-github-event": "issue_comment",
          "x-github-delivery": crypto.randomUUID(),
          "x-hub-signature-256": await sign(SECRET, body),
        },
        body,
      });
      await answer.body?.cancel();
      latencies.push(performance.now() - started);
      statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
    }
  }));
  latencies.sort((a, b) => a - b);
  const pct = (p: number) => latencies[Math.floor(p * (latencies.length - 1))]!.toFixed(1);
  console.log("| deliveries a second | p50 ms | p95 ms | p99 ms | max ms | answers |");
  console.log("| ---: | ---: | ---: | ---: | ---: | --- |");
  console.log(
    `| ${(latencies.length / SECONDS).toFixed(0)} | ${pct(0.5)} | ${pct(0.95)} | ${pct(0.99)} | ${
      latencies.at(-1)!.toFixed(1)
    } | ${[...statuses].map(([s, n]) => `${n}×${s}`).join(", ")} |`,
  );
} finally {
  await database.stop();
}

/** An App key (RSA, PKCS#8 PEM) for the service's settings. */
async function generateKey(): Promise<{ privateKey: string }> {
  const pair = await crypto.subtle.generateKey(
    {
      name: "RSASSA-PKCS1-v1_5",
      modulusLength: 2048,
      publicExponent: new Uint8Array([1, 0, 1]),
      hash: "SHA-256",
    },
    true,
    ["sign", "verify"],
  );
  const der = new Uint8Array(await crypto.subtle.exportKey("pkcs8", pair.privateKey));
  const base64 = btoa(String.fromCharCode(...der)).replace(/(.{64})/g, "$1\n");
  return { privateKey: `-----BEGIN PRIVATE KEY-----\n${base64}\n-----END PRIVATE KEY-----\n` };
}
