/**
 * The team's review, VM side (contract §21), with the real Claude Code CLI against the model
 * stand-in, real git and the VM agent's own socket and spool (what the platform would receive):
 * a builder's push in pull_request mode names the roster's reviewer; a review_pull_request
 * command becomes the reviewer's session on the pull request's head, in a checkout of its own
 * owned by its session user, answered through `--json-schema` and reported on
 * /pull-requests/reviews with line comments on the diff; what the review session commits or
 * leaves reaches no branch and is removed; an answer without a verdict is reported unreadable; a
 * reviewer the model service keeps refusing is retried, then reported unreadable with the error;
 * with review_rounds 0 no reviewer is named.
 */
import assert from "node:assert/strict";
import { ApprovalBoard } from "../../agent/approval_board.ts";
import { handleCommand } from "../../agent/command_handlers.ts";
import { serveLocalApi } from "../../agent/local_api.ts";
import { removeSessionUsers } from "../../agent/sandbox/session_users.ts";
import { Spool } from "../../agent/spool.ts";
import { TaskBoard } from "../../agent/team/task_board.ts";
import { teamSettings } from "../../agent/team/team_settings.ts";
import { TeamRunner } from "../../agent/team/team_runner.ts";
import type { Manifest } from "../../agent/team/types.ts";
import { ensureClaudeCode } from "../../local/claude_code.ts";
import { startModelStandIn } from "../../local/model_standin/server.ts";
import { eventually } from "../helpers/vm_api.ts";

const CLAUDE_ROOT = new URL("../../.local/claude-code", import.meta.url).pathname;
const WAIT = { timeoutMs: 120_000 };

async function git(cwd: string, ...args: string[]): Promise<string> {
  const out = await new Deno.Command("git", {
    args: ["-c", "user.name=person", "-c", "user.email=person@example.invalid", ...args],
    cwd,
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) {
    throw new Error(`git ${args.join(" ")}: ${new TextDecoder().decode(out.stderr)}`);
  }
  return new TextDecoder().decode(out.stdout).trim();
}

interface Review {
  number: number;
  head_sha: string;
  reviewer: string;
  session_id?: string;
  summary?: string;
  verdict?: string;
  comments?: { path: string; line: number; body: string }[];
  unreadable?: string;
}

Deno.test("the team's reviewer reviews a pull request's head, read-only", async (t) => {
  const root = await Deno.makeTempDir({ dir: "/tmp", prefix: "team-review-" });
  // Sessions run as their agents' users (run as root): they pass through to their directories.
  await Deno.chmod(root, 0o711);
  const prefix = `r${crypto.randomUUID().slice(0, 6)}-`;
  const claude = await ensureClaudeCode(CLAUDE_ROOT);
  const model = await startModelStandIn();
  const remote = `${root}/remote.git`;
  await git(root, "init", "--quiet", "--bare", "-b", "main", remote);
  const seed = `${root}/seed`;
  await git(root, "clone", "--quiet", remote, seed);
  await Deno.writeTextFile(`${seed}/README.md`, "# Sample\n");
  await git(seed, "add", "-A");
  await git(seed, "commit", "--quiet", "-m", "start");
  await git(seed, "push", "--quiet", "origin", "HEAD:main");

  const state = `${root}/state`;
  const workspace = `${root}/workspace`;
  await Deno.mkdir(state, { recursive: true, mode: 0o700 });
  const socketPath = `${state}/agent.sock`;
  const spool = await Spool.open(`${state}/spool`);
  const abort = new AbortController();
  const deps = {
    spool,
    board: new ApprovalBoard(`${state}/decisions`),
    spooled: () => {},
    declareAgents: () => {},
    spoolFull: () => {},
    signal: abort.signal,
    log: () => {},
  };
  const servers = [serveLocalApi(socketPath, deps)];
  let manifest: Manifest = {
    repository: { url: remote, branch: "main" },
    secrets: {},
    revision: 1,
    budget: null,
    delivery: { mode: "pull_request", branch_prefix: "agents/", draft: false, review_rounds: 2 },
  };
  const team = new TeamRunner({
    ...teamSettings({
      ANTHROPIC_BASE_URL: model.url,
      ANTHROPIC_API_KEY: "stand-in-key",
      AGENT_DEFAULT_MODEL: "claude-sonnet-5-5",
      AGENT_RETRY_BASE_SECONDS: "1",
      AGENT_MODEL_MAX_RETRIES: "0",
      AGENT_SESSION_USER_PREFIX: prefix,
    }),
    workspace,
    stateDir: state,
    agentsDir: `${root}/agents`,
    socketPath,
    claude,
    manifest: () => manifest,
    serveSessionSocket: async (path, agent) => {
      await Deno.remove(path).catch(() => {});
      servers.push(serveLocalApi(path, deps, agent));
      await Deno.chmod(path, 0o600);
    },
    cycleMs: 200,
    approvalTtlSeconds: 60,
    log: () => {},
  });
  const board = new TaskBoard(`${workspace}/board`);
  const spooled = async (route: string) =>
    (await spool.peek(10_000)).filter((i) => i.route === route).map((i) => i.body);
  const reviews = async () => (await spooled("/pull-requests/reviews")) as Review[];
  const chat = async (content: string) => {
    const id = crypto.randomUUID();
    await Deno.mkdir(`${workspace}/inbox`, { recursive: true });
    await Deno.writeTextFile(`${workspace}/inbox/${id}.json`, JSON.stringify({ id, content }));
    team.wake();
    return id;
  };
  /** The platform's command (review_pull_request, as 29_team_review.sql queues it, or another). */
  const command = async (
    payload: Record<string, unknown>,
    type: "review_pull_request" | "pull_request_feedback" = "review_pull_request",
  ) => {
    const outcome = await handleCommand({
      id: crypto.randomUUID(),
      type,
      payload,
      created_at: new Date().toISOString(),
      expires_at: new Date(Date.now() + 3_600_000).toISOString(),
      attempt: 1,
    }, {
      workspace,
      board: deps.board,
      refreshManifest: () => Promise.resolve({ revision: 1 }),
      acknowledge: () => Promise.resolve(),
    });
    assert.equal(outcome.status, "succeeded", JSON.stringify(outcome));
    team.wake();
  };
  /** A branch pushed as an author would, for an author's task on the board. */
  const authored = async (branch: string, text: string) => {
    await git(seed, "checkout", "--quiet", "-B", branch, "origin/main");
    await Deno.writeTextFile(`${seed}/notes.txt`, `one\ntwo\n`);
    await git(seed, "add", "-A");
    await git(seed, "commit", "--quiet", "-m", text);
    await git(seed, "push", "--quiet", "origin", `HEAD:refs/heads/${branch}`);
    const id = crypto.randomUUID();
    await board.add({ id, agent: "builder", kind: "work", text, from: "user", branch });
    return { id, head: await git(seed, "rev-parse", "HEAD") };
  };

  await team.start();
  try {
    let pull: { task_id: string; branch: string; reviewer?: string } | undefined;
    await t.step("a builder's push names the roster's reviewer", async () => {
      await chat(
        "@builder Add `src/greet.ts` and run " +
          '`echo left > left-by-$VM_AGENT_NAME.txt && git add -A && git commit -qm "left by $VM_AGENT_NAME" && git log -1 --format=%s && stat -c owner=%U .`',
      );
      pull = await eventually(
        async () => (await spooled("/pull-requests"))[0],
        WAIT,
      ) as typeof pull;
      assert.equal(pull!.reviewer, "reviewer");
    });

    let first: Review | undefined;
    const head = async () => await git(root, "--git-dir", remote, "rev-parse", pull!.branch);
    await t.step("review_pull_request: the reviewer's session answers on the head", async () => {
      const sha = await head();
      const before = await git(root, "--git-dir", remote, "for-each-ref");
      await command({
        task_id: pull!.task_id,
        number: 7,
        branch: pull!.branch,
        base: "main",
        head_sha: sha,
        author_agent: "builder",
        reviewer: "reviewer",
        round: 1,
      });
      first = await eventually(async () => (await reviews())[0], WAIT);
      assert.equal(first!.number, 7);
      assert.equal(first!.head_sha, sha);
      assert.equal(first!.reviewer, "reviewer");
      assert.ok(first!.session_id);
      assert.equal(first!.verdict, "request_changes", JSON.stringify(first));
      assert.match(first!.summary!, /^Round 1: /);
      // One comment on each file the diff adds, on the line it adds (the head's numbering).
      assert.deepEqual(
        first!.comments!.map((c) => [c.path, c.line]).sort(),
        [["left-by-builder.txt", 1], ["src/greet.ts", 1]],
      );
      // It ran on the head, as its own user, and committed there: the stand-in heard both.
      assert.ok(model.heard("left by reviewer"), "the review session's commit");
      assert.ok(model.heard(`owner=${prefix}reviewer`), "the checkout is the reviewer user's");
      // …and nothing of it reached any branch, and its checkout is gone.
      assert.equal(await git(root, "--git-dir", remote, "for-each-ref"), before);
      const everything = await git(root, "--git-dir", remote, "log", "--all", "--format=%s");
      assert.doesNotMatch(everything, /left by reviewer/);
      assert.equal(await Deno.stat(`${root}/agents/reviewer/review`).catch(() => null), null);
      const task = (await board.list()).find((x) => x.kind === "review");
      assert.equal(task?.status, "completed");
      // Its cost is reported as any session's.
      const sessions = (await spooled("/metrics/cli-sessions")) as {
        sessions: { session_id: string; agent: string }[];
      }[];
      assert.ok(sessions.some((s) => s.sessions[0]!.session_id === first!.session_id));
    });

    await t.step(
      "changes requested: the author pushes to the same branch, named as before",
      async () => {
        const before = await head();
        // What the platform sends the author for a request_changes (a follow-up of kind review).
        await command({
          agent: "builder",
          branch: pull!.branch,
          kind: "review",
          task_id: pull!.task_id,
          number: 7,
          author: "reviewer",
          body: `The team's reviewer reviewer requested changes:\n\n${first!.summary}`,
        }, "pull_request_feedback");
        const pushed = await eventually(
          async () => (await spooled("/pull-requests"))[1] as typeof pull & { title: string },
          WAIT,
        );
        assert.equal(pushed!.branch, pull!.branch);
        assert.notEqual(await head(), before, "a new head");
        // The pull request keeps its own title and body, and its next head is reviewed again.
        const original = (await spooled("/pull-requests"))[0] as { title: string; body: string };
        assert.equal(pushed!.title, original.title);
        assert.equal((pushed as unknown as { body: string }).body, original.body);
        assert.equal(pushed!.reviewer, "reviewer");
      },
    );

    await t.step("the next round approves", async () => {
      await command({
        task_id: pull!.task_id,
        number: 7,
        branch: pull!.branch,
        base: "main",
        head_sha: await head(),
        author_agent: "builder",
        reviewer: "reviewer",
        round: 2,
      });
      const second = await eventually(async () => (await reviews())[1], WAIT);
      assert.equal(second!.verdict, "approve", JSON.stringify(second));
      assert.match(second!.summary!, /^Round 2: /);
    });

    await t.step("an answer without a verdict is reported unreadable", async () => {
      const { id, head: sha } = await authored(
        "agents/builder/undecided-000001",
        "Note two lines [model:review-unreadable]",
      );
      await command({
        task_id: id,
        number: 8,
        branch: "agents/builder/undecided-000001",
        base: "main",
        head_sha: sha,
        author_agent: "builder",
        reviewer: "reviewer",
        round: 1,
      });
      const answer = await eventually(
        async () => (await reviews()).find((r) => r.number === 8),
        WAIT,
      );
      assert.equal(answer!.verdict, undefined);
      assert.match(answer!.unreadable!, /cannot say whether it is ready/);
    });

    await t.step(
      "a reviewer the model service keeps refusing: retried, then unreadable",
      async () => {
        const { id, head: sha } = await authored(
          "agents/builder/busy-000002",
          "Note two lines [model:overloaded]",
        );
        await command({
          task_id: id,
          number: 9,
          branch: "agents/builder/busy-000002",
          base: "main",
          head_sha: sha,
          author_agent: "builder",
          reviewer: "reviewer",
          round: 1,
        });
        const answer = await eventually(
          async () => (await reviews()).find((r) => r.number === 9),
          WAIT,
        );
        assert.match(answer!.unreadable!, /^The review failed: .*overloaded/is);
        const task = (await board.list()).find((x) => x.review?.number === 9);
        assert.equal(task?.status, "failed");
        assert.equal(task?.retries, 3);
      },
    );

    await t.step("review_rounds 0: no reviewer is named", async () => {
      manifest = {
        ...manifest,
        revision: 2,
        delivery: { ...manifest.delivery!, review_rounds: 0 },
      };
      const before = (await spooled("/pull-requests")).length;
      await chat("@builder Add `src/bye.ts`");
      const report = await eventually(
        async () => (await spooled("/pull-requests"))[before] as { reviewer?: string },
        WAIT,
      );
      assert.equal(report!.reviewer, undefined);
      assert.equal((await board.list()).filter((x) => x.kind === "review").length, 4);
    });
  } finally {
    await team.stop();
    abort.abort();
    await Promise.all(servers.map((s) => s.finished));
    await model.close();
    await removeSessionUsers(prefix);
    await Deno.remove(root, { recursive: true }).catch(() => {});
  }
});
