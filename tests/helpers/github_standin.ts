/**
 * What the GitHub stand-in's tests drive it with: a stand-in per test with its scratch space,
 * git with nothing of this machine's configuration (the token through a credential helper, as a
 * VM has it), a webhook receiver that checks every delivery (its signature with
 * `@octokit/webhooks-methods`, its payload against GitHub's description), and the page's HTML
 * forms, parsed (linkedom) and posted back.
 */
import assert from "node:assert/strict";
import { verify } from "@octokit/webhooks-methods";
import { DOMParser } from "linkedom";
import {
  DEMO_OWNER,
  type GitHubStandIn,
  type GitHubStandInOptions,
  startGitHubStandIn,
} from "../../local/github/server.ts";
import { conformWebhook, type Json } from "./github_openapi.ts";

/** Work trees and scratch space of the running test, removed when it ends. */
const scratchDirs = new Set<string>();

export async function tempDir(): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "github-standin-test-" });
  scratchDirs.add(dir);
  return dir;
}

export async function withStandIn(
  fn: (gh: GitHubStandIn) => Promise<void>,
  options: GitHubStandInOptions = {},
): Promise<void> {
  try {
    await using gh = await startGitHubStandIn(options);
    await fn(gh);
  } finally {
    await removeScratch();
  }
}

export async function removeScratch(): Promise<void> {
  for (const dir of scratchDirs) await Deno.remove(dir, { recursive: true });
  scratchDirs.clear();
}

/** A repository of demo-owner with the App installed on it; answers the installation id. */
export async function installedRepo(
  gh: GitHubStandIn,
  name: string,
  seed?: Record<string, string>,
) {
  await gh.createRepository(DEMO_OWNER, name, seed ? { seed } : {});
  return gh.install(DEMO_OWNER, [name]);
}

// ---- git -----------------------------------------------------------------------------------

/** git with nothing of this machine's configuration, a home of its own and no prompts. */
export async function git(
  cwd: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<{ ok: boolean; out: string; err: string }> {
  const output = await new Deno.Command("git", {
    args,
    cwd,
    env: {
      GIT_CONFIG_NOSYSTEM: "1",
      GIT_CONFIG_GLOBAL: "/dev/null",
      GIT_TERMINAL_PROMPT: "0",
      HOME: cwd,
      GIT_AUTHOR_NAME: "Builder",
      GIT_AUTHOR_EMAIL: "builder@agents.invalid",
      GIT_COMMITTER_NAME: "Builder",
      GIT_COMMITTER_EMAIL: "builder@agents.invalid",
      ...env,
    },
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(60_000),
  }).output();
  const decode = (b: Uint8Array) => new TextDecoder().decode(b).trim();
  return { ok: output.success, out: decode(output.stdout), err: decode(output.stderr) };
}

export async function gitOk(cwd: string, args: string[], env: Record<string, string> = {}) {
  const result = await git(cwd, args, env);
  if (!result.ok) throw new Error(`git ${args.join(" ")}: ${result.err}`);
  return result.out;
}

/** The credential helper a VM uses: the token comes from the environment, never the URL. */
export const HELPER = [
  "-c",
  "credential.helper=",
  "-c",
  'credential.helper=!f() { echo username=x-access-token; echo "password=$GH_TOKEN"; }; f',
];

/** A clone with the token through the helper; answers the work tree. */
export async function cloneWith(gh: GitHubStandIn, repo: string, token: string): Promise<string> {
  const dir = await tempDir();
  await gitOk(dir, [...HELPER, "clone", "-q", `${gh.webUrl}/${DEMO_OWNER}/${repo}.git`, "work"], {
    GH_TOKEN: token,
  });
  return `${dir}/work`;
}

/** Commits `files` on a new or existing branch of the clone and pushes it; answers the commit. */
export async function commitAndPush(
  work: string,
  token: string,
  branch: string,
  files: Record<string, string>,
  message = `Change ${Object.keys(files).join(", ")}`,
): Promise<string> {
  const switched = await git(work, ["checkout", "-q", branch]);
  if (!switched.ok) await gitOk(work, ["checkout", "-q", "-b", branch]);
  for (const [path, content] of Object.entries(files)) {
    await Deno.mkdir(`${work}/${path}`.replace(/\/[^/]+$/, ""), { recursive: true });
    await Deno.writeTextFile(`${work}/${path}`, content);
  }
  await gitOk(work, ["add", "-A"]);
  await gitOk(work, ["commit", "-q", "-m", message]);
  await gitOk(work, [...HELPER, "push", "-q", "origin", branch], { GH_TOKEN: token });
  return await gitOk(work, ["rev-parse", "HEAD"]);
}

// ---- a webhook receiver ----------------------------------------------------------------------

interface Received {
  headers: Headers;
  body: string;
  payload: Json;
}

/**
 * A webhook receiver on 127.0.0.1, set as the stand-in's webhook URL: it keeps what arrives,
 * answers what the test says, and checks every delivery as it comes (the signature with
 * `@octokit/webhooks-methods` against the stand-in's secret, the payload against the
 * description); disposing of it fails the test if any delivery did not pass.
 */
export function startReceiver(gh: GitHubStandIn) {
  const received: Received[] = [];
  const answers: number[] = [];
  const problems: string[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const body = await req.text();
    const event = req.headers.get("x-github-event") ?? "";
    const payload = JSON.parse(body);
    received.push({ headers: req.headers, body, payload });
    if (!await verify(gh.webhookSecret, body, req.headers.get("x-hub-signature-256") ?? "")) {
      problems.push(`${event}: the signature does not verify`);
    }
    try {
      conformWebhook(event, payload);
    } catch (error) {
      problems.push(String(error));
    }
    return new Response(null, { status: answers.shift() ?? 204 });
  });
  gh.webhookUrl = `http://127.0.0.1:${server.addr.port}/github`;
  return {
    received,
    /** The statuses to answer the next deliveries with (then 204). */
    answers,
    of: (event: string, action?: string) =>
      received.filter((r) =>
        r.headers.get("x-github-event") === event &&
        (action === undefined || r.payload.action === action)
      ),
    [Symbol.asyncDispose]: async () => {
      await server.shutdown();
      assert.deepEqual(problems, [], "every delivery verifies and matches the description");
    },
  };
}

export function formOf(html: string, action: string) {
  const document = new DOMParser().parseFromString(html, "text/html");
  const form = [...document.querySelectorAll("form")].find((f: Json) =>
    f.getAttribute("action")?.endsWith(action)
  ) as Json;
  assert.ok(form, `a form posting to …${action}`);
  const fields: Record<string, string> = {};
  for (const input of form.querySelectorAll("input, textarea")) {
    const type = input.getAttribute("type");
    if ((type === "radio" || type === "checkbox") && !input.hasAttribute("checked")) continue;
    fields[input.getAttribute("name")] = input.getAttribute("value") ?? input.textContent ?? "";
  }
  for (const select of form.querySelectorAll("select")) {
    const chosen = select.querySelector("option[selected]") ?? select.querySelector("option");
    fields[select.getAttribute("name")] = chosen?.getAttribute("value") ?? "";
  }
  return {
    action: form.getAttribute("action") as string,
    method: form.getAttribute("method"),
    fields,
  };
}

export async function post(
  gh: GitHubStandIn,
  action: string,
  fields: Record<string, string | string[]>,
) {
  const body = new URLSearchParams();
  for (const [k, v] of Object.entries(fields)) {
    for (const value of [v].flat()) body.append(k, value);
  }
  return await fetch(`${gh.webUrl}${action}`, { method: "POST", body, redirect: "manual" });
}
