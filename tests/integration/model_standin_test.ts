/**
 * The model stand-in driven by the real Claude Code CLI (the pinned version, from
 * ensureClaudeCode) in a temp git repository, judged by the files it leaves and the CLI's JSON:
 * files created and appended through Read/Write, commands run, a real rebase conflict resolved,
 * the lead's handoff, a PreToolUse hook's refusal, usage and cost that follow the prompt's size;
 * then the service's edges the markers select, as the CLI meets them (several tool calls in one
 * answer, 529s it retries, a rate limit, a spend limit, a stream that breaks off, an unknown
 * model, cache usage). HOME, CLAUDE_CONFIG_DIR and TMPDIR point into the temp dir, so nothing of
 * the machine's leaks in or out. Then the HTTP surface alone: errors in Anthropic's shape, both
 * answer formats, a slow stream.
 */
import assert from "node:assert/strict";
import { ensureClaudeCode } from "../../local/claude_code.ts";
import { type ModelStandIn, startModelStandIn } from "../../local/model_standin/server.ts";
import { conflictCommand } from "../../local/model_standin/plan.ts";

const CLAUDE_ROOT = new URL("../../.local/claude-code", import.meta.url).pathname;
const TOOLS = "Bash,Read,Edit,Write,Glob,Grep,LS";
const MODEL = "claude-sonnet-4-5";

interface CliJson {
  type: string;
  session_id: string;
  is_error: boolean;
  result: string;
  num_turns: number;
  total_cost_usd: number;
  usage: { input_tokens: number; output_tokens: number };
  modelUsage: Record<string, ModelUsage>;
  permission_denials: { tool_name: string }[];
  api_error_status: number | null;
  /** `error.details.error_code` of the API error the session ended on. */
  api_error_code?: string;
}

interface ModelUsage {
  inputTokens: number;
  outputTokens: number;
  cacheReadInputTokens: number;
  cacheCreationInputTokens: number;
}

function persona(name: string, lead = false): string {
  return [
    `# You are ${name}, an agent of this project's team`,
    lead ? "You are the lead of the team." : "The lead of the team is lead.",
    "Your teammates: lead, builder, reviewer.",
    "You work in your own clone of the project's repository.",
  ].join("\n");
}

async function git(cwd: string, ...args: string[]): Promise<string> {
  const out = await new Deno.Command("git", { args, cwd, stdout: "piped", stderr: "piped" })
    .output();
  const text = new TextDecoder().decode(out.stdout).trim();
  if (!out.success) {
    throw new Error(`git ${args.join(" ")}: ${new TextDecoder().decode(out.stderr)}`);
  }
  return text;
}

async function newRepo(dir: string): Promise<string> {
  await Deno.mkdir(dir, { recursive: true });
  await git(dir, "init", "-q", "-b", "main");
  await git(dir, "config", "user.name", "test");
  await git(dir, "config", "user.email", "test@example.invalid");
  await Deno.writeTextFile(`${dir}/README.md`, "# Sample\n");
  await git(dir, "add", "-A");
  await git(dir, "commit", "-q", "-m", "start");
  return dir;
}

/** A place for sessions: the CLI, the stand-in, and a home of their own. */
async function sessions(root: string, model: ModelStandIn) {
  const claude = await ensureClaudeCode(CLAUDE_ROOT);
  const home = `${root}/home`;
  await Deno.mkdir(`${home}/tmp`, { recursive: true });
  return async (
    cwd: string,
    prompt: string,
    system: string,
    options: { settings?: unknown; model?: string } = {},
  ): Promise<CliJson> => {
    const child = new Deno.Command(claude, {
      args: [
        "-p",
        prompt,
        "--output-format",
        "json",
        "--permission-mode",
        "acceptEdits",
        "--allowedTools",
        TOOLS,
        "--append-system-prompt",
        system,
        "--model",
        options.model ?? MODEL,
        ...(options.settings ? ["--settings", JSON.stringify(options.settings)] : []),
      ],
      cwd,
      clearEnv: true,
      env: {
        PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
        HOME: home,
        CLAUDE_CONFIG_DIR: `${home}/.claude`,
        TMPDIR: `${home}/tmp`,
        ANTHROPIC_BASE_URL: model.url,
        ANTHROPIC_API_KEY: "stand-in-key",
        DISABLE_AUTOUPDATER: "1",
      },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
      signal: AbortSignal.timeout(60_000),
    });
    const out = await child.output();
    const stdout = new TextDecoder().decode(out.stdout);
    const stderr = new TextDecoder().decode(out.stderr);
    const json = JSON.parse(stdout.trim().split("\n").at(-1) || "null") as CliJson | null;
    // A session that ends on an API error exits with 1, and says so in its JSON.
    assert.ok(
      json && (out.success || json.is_error),
      `claude exited with ${out.code}: ${stderr}${stdout}`,
    );
    return json;
  };
}

interface TranscriptBlock {
  /** The API message the block came in (the CLI writes one transcript line per block). */
  message: string;
  type: string;
  name: string;
  input: Record<string, unknown>;
}

/** The model's content blocks a session's transcript holds (CLAUDE_CONFIG_DIR/projects/<cwd>/<id>.jsonl). */
async function transcriptBlocks(root: string, sessionId: string): Promise<TranscriptBlock[]> {
  const projects = `${root}/home/.claude/projects`;
  for (const dir of Deno.readDirSync(projects)) {
    const path = `${projects}/${dir.name}/${sessionId}.jsonl`;
    const text = await Deno.readTextFile(path).catch(() => undefined);
    if (text === undefined) continue;
    return text.trim().split("\n").map((line) => JSON.parse(line))
      .flatMap((entry) =>
        entry.type === "assistant"
          ? entry.message.content.map((block: TranscriptBlock) => ({
            ...block,
            message: entry.message.id,
          }))
          : []
      );
  }
  throw new Error(`no transcript for session ${sessionId}`);
}

/** The tool calls a session's transcript holds. */
async function transcriptToolCalls(root: string, sessionId: string) {
  return (await transcriptBlocks(root, sessionId))
    .filter((block) => block.type === "tool_use")
    .map(({ name, input }) => ({ name, input }));
}

/** The tools each of the model's answers called, answer by answer (a text answer calls none). */
async function toolsByAnswer(root: string, sessionId: string): Promise<string[][]> {
  const answers = new Map<string, string[]>();
  for (const block of await transcriptBlocks(root, sessionId)) {
    const tools = answers.get(block.message) ?? [];
    if (block.type === "tool_use") tools.push(block.name);
    answers.set(block.message, tools);
  }
  return [...answers.values()];
}

Deno.test("the real Claude Code CLI works with the stand-in's deterministic team", async (t) => {
  const root = await Deno.makeTempDir({ prefix: "model-standin-" });
  const model = await startModelStandIn({ hostname: "127.0.0.1" });
  try {
    const run = await sessions(root, model);
    const repo = await newRepo(`${root}/repo`);
    const sizes: CliJson[] = [];

    await t.step("a task naming src/hello.txt creates it, directory and all", async () => {
      const json = await run(
        repo,
        "Task 1 from lead:\nCreate `src/hello.txt` with a greeting",
        persona("builder"),
      );
      assert.equal(json.is_error, false);
      assert.equal(
        json.result,
        "Done: Create `src/hello.txt` with a greeting. Changed src/hello.txt.",
      );
      assert.equal(json.num_turns, 3);
      assert.equal(
        await Deno.readTextFile(`${repo}/src/hello.txt`),
        "builder: Create `src/hello.txt` with a greeting\n",
      );
      sizes.push(json);
    });

    await t.step("a second task appends to it: Read, then Write of the whole file", async () => {
      const json = await run(
        repo,
        "Task 2 from lead:\nReview `src/hello.txt`\nand say so there.",
        persona("reviewer"),
      );
      assert.equal(json.result, "Done: Review `src/hello.txt`. Changed src/hello.txt.");
      assert.equal(
        await Deno.readTextFile(`${repo}/src/hello.txt`),
        "builder: Create `src/hello.txt` with a greeting\nreviewer: Review `src/hello.txt`\n",
      );
      assert.deepEqual((await transcriptToolCalls(root, json.session_id)).map((c) => c.name), [
        "Read",
        "Write",
      ]);
    });

    await t.step("run `...` runs each command with Bash, in order", async () => {
      const json = await run(
        repo,
        "Task 3 from lead:\nrun `git status --short` then run `touch ran-marker`",
        persona("builder"),
      );
      assert.equal(
        json.result,
        "Done: run `git status --short` then run `touch ran-marker`. " +
          "Ran git status --short, touch ran-marker.",
      );
      assert.ok((await Deno.stat(`${repo}/ran-marker`)).isFile);
      assert.deepEqual(await transcriptToolCalls(root, json.session_id), [
        {
          name: "Bash",
          input: { command: "git status --short", description: "Run git status --short" },
        },
        {
          name: "Bash",
          input: { command: "touch ran-marker", description: "Run touch ran-marker" },
        },
      ]);
      await git(repo, "add", "-A");
      await git(repo, "commit", "-q", "-m", "work so far");
    });

    await t.step("the lead hands a task to @builder and touches only NOTES.md", async () => {
      const json = await run(
        repo,
        "Task 4 from human:\nPlease @builder add `docs/guide.md` and run `touch nope`",
        persona("lead", true),
      );
      const lines = json.result.split("\n");
      assert.equal(lines.at(-1), "@builder Please add `docs/guide.md` and run `touch nope`");
      assert.equal(await git(repo, "status", "--porcelain"), "?? NOTES.md");
      assert.equal(
        await Deno.readTextFile(`${repo}/NOTES.md`),
        'lead: handed "Please add `docs/guide.md` and run `touch nope`" to builder\n',
      );
    });

    await t.step(
      "a PreToolUse hook's deny: the command does not run, the answer says why",
      async () => {
        const hook = `${root}/deny-hook.sh`;
        await Deno.writeTextFile(
          hook,
          "#!/bin/sh\ncat > /dev/null\nprintf '%s' " +
            `'${
              JSON.stringify({
                hookSpecificOutput: {
                  hookEventName: "PreToolUse",
                  permissionDecision: "deny",
                  permissionDecisionReason: "A person rejected this command.\nDo not retry.",
                },
              })
            }'\n`,
        );
        await Deno.chmod(hook, 0o755);
        const settings = {
          hooks: {
            PreToolUse: [{
              matcher: "Bash",
              hooks: [{ type: "command", command: hook, timeout: 600 }],
            }],
          },
        };
        const json = await run(
          repo,
          "Task 5 from lead:\nrun `touch denied-marker` and note `log.txt`",
          persona("builder"),
          { settings },
        );
        assert.deepEqual(json.result.split("\n"), [
          "Done: run `touch denied-marker` and note `log.txt`. Changed log.txt.",
          "Could not run touch denied-marker: A person rejected this command.",
        ]);
        assert.deepEqual(json.permission_denials.map((d) => d.tool_name), ["Bash"]);
        assert.equal(await Deno.stat(`${repo}/denied-marker`).catch(() => undefined), undefined);
        assert.ok((await Deno.stat(`${repo}/log.txt`)).isFile);
      },
    );

    await t.step("usage and cost are counted, and grow with a bigger prompt", async () => {
      const big = await run(
        repo,
        `Task 6 from lead:\nRead this through.\n${"All work and no play. ".repeat(4_000)}`,
        persona("reviewer"),
      );
      const [small] = sizes;
      assert.ok(small!.usage.input_tokens > 0 && small!.usage.output_tokens > 0);
      assert.ok(small!.total_cost_usd > 0);
      // About 88,000 characters more in each of the three requests: ~22,000 tokens each.
      assert.ok(
        big.usage.input_tokens > small!.usage.input_tokens + 3 * 20_000,
        `${big.usage.input_tokens} vs ${small!.usage.input_tokens}`,
      );
      assert.ok(big.total_cost_usd > small!.total_cost_usd + 0.15);
      assert.ok(model.requests() >= 6 * 3);
    });
  } finally {
    await model.close();
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("the real CLI resolves a real rebase conflict with the stand-in: both sides kept", async () => {
  const root = await Deno.makeTempDir({ prefix: "model-standin-conflict-" });
  const model = await startModelStandIn();
  try {
    const run = await sessions(root, model);
    const repo = await newRepo(`${root}/repo`);
    await Deno.writeTextFile(`${repo}/story's end.txt`, "start\nmiddle\n");
    await git(repo, "add", "-A");
    await git(repo, "commit", "-q", "-m", "story");
    await git(repo, "checkout", "-q", "-b", "mine");
    await Deno.writeTextFile(`${repo}/story's end.txt`, "start\nmy side\n");
    await git(repo, "commit", "-q", "-am", "mine");
    await git(repo, "checkout", "-q", "main");
    await Deno.writeTextFile(`${repo}/story's end.txt`, "start\ntheir side\n");
    await git(repo, "commit", "-q", "-am", "theirs");
    await git(repo, "checkout", "-q", "mine");
    await assert.rejects(git(repo, "rebase", "main"), /could not apply/);
    assert.match(await Deno.readTextFile(`${repo}/story's end.txt`), /^<<<<<<< /m);

    const json = await run(
      repo,
      [
        "Your last push conflicted with what others pushed to main. A rebase onto origin/main " +
        "is in progress in your clone.",
        "Resolve the rebase conflict in these files:",
        "- story's end.txt",
        "Keep both sides' intent, remove every conflict marker, and do not run git rebase yourself.",
      ].join("\n"),
      persona("builder"),
    );
    assert.equal(json.result, "Resolved the conflict in story's end.txt.");
    assert.equal(
      await Deno.readTextFile(`${repo}/story's end.txt`),
      "start\ntheir side\nmy side\n",
    );
    const calls = await transcriptToolCalls(root, json.session_id);
    assert.deepEqual(calls.map((c) => c.input.command), [conflictCommand("story's end.txt")]);
  } finally {
    await model.close();
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("the real CLI meets the service's edges the markers select", async (t) => {
  const root = await Deno.makeTempDir({ prefix: "model-standin-edges-" });
  const model = await startModelStandIn();
  try {
    const run = await sessions(root, model);
    const repo = await newRepo(`${root}/repo`);
    /**
     * The session's JSON and how many Messages requests the stand-in answered for it (besides
     * the reachability check, `HEAD /api/hello`, the CLI's first request in every session).
     */
    const counted = async (prompt: string, options: { model?: string } = {}) => {
      const before = model.requests();
      const json = await run(repo, prompt, persona("builder"), options);
      return { json, requests: model.requests() - before - 1 };
    };

    await t.step("[model:parallel]: several tool_use blocks in one answer, all run", async () => {
      const { json } = await counted(
        "Task 1 from lead:\n[model:parallel] run `touch together` and note `p1.md` and `p2.md`",
      );
      assert.equal(json.is_error, false);
      assert.equal(
        json.result,
        "Done: run `touch together` and note `p1.md` and `p2.md`. Changed p1.md, p2.md; " +
          "ran touch together.",
      );
      assert.deepEqual(await toolsByAnswer(root, json.session_id), [
        ["Bash", "Read", "Read"],
        ["Write", "Write"],
        [],
      ]);
      assert.ok((await Deno.stat(`${repo}/together`)).isFile);
      assert.equal(
        await Deno.readTextFile(`${repo}/p2.md`),
        "builder: run `touch together` and note `p1.md` and `p2.md`\n",
      );
    });

    await t.step(
      "[model:overloaded=2]: two 529s, the CLI retries on its own and succeeds",
      async () => {
        const { json, requests } = await counted(
          "Task 2 from lead:\n[model:overloaded=2] note `o.md`",
        );
        assert.equal(json.is_error, false);
        assert.equal(json.result, "Done: note `o.md`. Changed o.md.");
        // Two refused, then Read, Write and the answer.
        assert.equal(requests, 2 + 3);
      },
    );

    await t.step("[model:rate-limited=1]: a 429 with retry-after, retried after it", async () => {
      const started = Date.now();
      const { json, requests } = await counted(
        "Task 3 from lead:\n[model:rate-limited=1] note `r.md`",
      );
      assert.equal(json.is_error, false);
      assert.equal(requests, 1 + 3);
      assert.ok(Date.now() - started >= 1_000, "the CLI waited for retry-after");
    });

    await t.step("[model:stream-error=1]: a stream that breaks off is asked again", async () => {
      const { json, requests } = await counted(
        "Task 4 from lead:\n[model:stream-error=1] note `s.md`",
      );
      assert.equal(json.is_error, false);
      assert.equal(json.result, "Done: note `s.md`. Changed s.md.");
      assert.equal(requests, 1 + 3);
    });

    await t.step(
      "[model:spend-limit]: one 429 that ends the session, its error_code shown",
      async () => {
        const { json, requests } = await counted(
          "Task 5 from lead:\n[model:spend-limit] note `x.md`",
        );
        assert.equal(json.is_error, true);
        assert.equal(json.api_error_status, 429);
        assert.equal(json.api_error_code, "enforced_spend_limit_reached");
        assert.match(json.result, /You have reached your specified API usage limits/);
        assert.equal(requests, 1, "a spend limit is not retried");
      },
    );

    await t.step("a model the service does not know: 404, the session ends naming it", async () => {
      const { json } = await counted("Task 6 from lead:\nnote `m.md`", {
        model: "claude-nonexistent-9",
      });
      assert.equal(json.is_error, true);
      assert.equal(json.api_error_status, 404);
      assert.match(json.result, /claude-nonexistent-9/);
      assert.equal(await Deno.stat(`${repo}/m.md`).catch(() => undefined), undefined);
    });

    await t.step("[model:cache]: modelUsage reports cache reads and writes", async () => {
      const { json, requests } = await counted("Task 7 from lead:\n[model:cache] note `c.md`");
      const usage = json.modelUsage[MODEL]!;
      assert.ok(usage.cacheReadInputTokens > 10_000, JSON.stringify(usage));
      assert.ok(usage.cacheCreationInputTokens > 0, JSON.stringify(usage));
      // What the cache does not hold is one token a request.
      assert.equal(usage.inputTokens, requests);
    });
  } finally {
    await model.close();
    await Deno.remove(root, { recursive: true });
  }
});

// ---- the HTTP surface, without the CLI ----

const KEY = { "x-api-key": "k", "content-type": "application/json" };
const TASK = {
  model: "claude-haiku-4-5",
  max_tokens: 1024,
  system: [{ type: "text", text: persona("builder") }],
  tools: [{ name: "Read" }, { name: "Write" }, { name: "Bash" }],
  messages: [{
    role: "user",
    content: [
      {
        type: "text",
        text: "<system-reminder>\n - Primary working directory: /w\n</system-reminder>",
      },
      { type: "text", text: "Task 1 from lead:\nCreate `a.txt`" },
    ],
  }],
};

function sizeOf(body: { system: unknown; messages: unknown; tools: unknown }): number {
  return Math.ceil(JSON.stringify([body.system, body.messages, body.tools]).length / 4);
}

/** An error's body without its `request_id`, which must be the `request-id` header's. */
async function errorBody(response: Response): Promise<unknown> {
  const { request_id, ...body } = await response.json();
  assert.match(request_id, /^req_/);
  assert.equal(request_id, response.headers.get("request-id"));
  return body;
}

/** The task with markers in its prompt. */
function marked(markers: string, extra: Record<string, unknown> = {}) {
  const [reminder] = TASK.messages[0]!.content;
  const prompt = { type: "text", text: `Task 1 from lead:\n${markers} Create \`a.txt\`` };
  return { ...TASK, messages: [{ role: "user", content: [reminder, prompt] }], ...extra };
}

/** A server-sent events body as its events. */
function sseEvents(text: string) {
  return text.trim().split("\n\n").map((chunk) => {
    const [event, data] = chunk.split("\n");
    return {
      event: event!.slice("event: ".length),
      data: JSON.parse(data!.slice("data: ".length)),
    };
  });
}

Deno.test("the stand-in answers what the CLI asks for, and errors in Anthropic's shape", async (t) => {
  const controller = new AbortController();
  const model = await startModelStandIn({ signal: controller.signal });
  const post = (path: string, body: unknown, headers: Record<string, string> = KEY) =>
    fetch(`${model.url}${path}`, {
      method: "POST",
      headers,
      body: typeof body === "string" ? body : JSON.stringify(body),
    });

  await t.step("HEAD and GET /api/hello: 200, without a key", async () => {
    for (const method of ["HEAD", "GET"]) {
      const response = await fetch(`${model.url}/api/hello`, { method });
      await response.body?.cancel();
      assert.equal(response.status, 200);
    }
  });

  await t.step("no key: 401 authentication_error; a Bearer token is a key", async () => {
    const response = await post("/v1/messages", TASK, { "content-type": "application/json" });
    assert.equal(response.status, 401);
    assert.deepEqual(await errorBody(response), {
      type: "error",
      error: {
        type: "authentication_error",
        message: "x-api-key or Authorization: Bearer is required",
      },
    });
    const bearer = await post("/v1/messages", TASK, { authorization: "Bearer t" });
    assert.equal(bearer.status, 200);
    await bearer.body?.cancel();
  });

  await t.step("anything else: 404 not_found_error", async () => {
    for (
      const [method, path] of [["GET", "/v1/models"], ["GET", "/v1/messages"], [
        "POST",
        "/",
      ]] as const
    ) {
      const response = await fetch(`${model.url}${path}`, { method, headers: KEY });
      assert.equal(response.status, 404);
      assert.deepEqual(await errorBody(response), {
        type: "error",
        error: { type: "not_found_error", message: `${method} ${path} is not served here` },
      });
    }
  });

  await t.step("a malformed body: 400 invalid_request_error", async () => {
    for (
      const [body, message] of [
        ["{not json", "The request body is not valid JSON"],
        [{ model: "m", messages: [] }, "messages: a non-empty list is required"],
        [{ messages: TASK.messages }, "model: a string is required"],
        [
          { model: "m", messages: [{ role: "x", content: 1 }] },
          "messages: each needs a role (user, assistant or system) and content",
        ],
      ] as const
    ) {
      const response = await post("/v1/messages", body);
      assert.equal(response.status, 400);
      assert.deepEqual(await errorBody(response), {
        type: "error",
        error: { type: "invalid_request_error", message },
      });
    }
  });

  await t.step(
    "not streamed: one message, the request's model echoed, usage from sizes",
    async () => {
      const response = await post("/v1/messages", TASK);
      assert.equal(response.status, 200);
      const message = await response.json();
      assert.match(message.id, /^msg_/);
      assert.equal(message.model, "claude-haiku-4-5");
      assert.equal(message.stop_reason, "tool_use");
      assert.equal(message.content.length, 1);
      assert.deepEqual(
        { ...message.content[0], id: undefined },
        { type: "tool_use", id: undefined, name: "Read", input: { file_path: "/w/a.txt" } },
      );
      assert.equal(message.usage.input_tokens, sizeOf(TASK));
      assert.equal(
        message.usage.output_tokens,
        Math.ceil(("Read" + JSON.stringify({ file_path: "/w/a.txt" })).length / 4),
      );
    },
  );

  await t.step("streamed: the SSE events the CLI reads, ping included", async () => {
    const response = await post("/v1/messages", {
      ...TASK,
      stream: true,
      tools: undefined,
    });
    assert.equal(response.headers.get("content-type"), "text/event-stream");
    const events = sseEvents(await response.text());
    assert.deepEqual(events.map((e) => e.event), [
      "message_start",
      "ping",
      "content_block_start",
      "content_block_delta",
      "content_block_delta",
      "content_block_stop",
      "message_delta",
      "message_stop",
    ]);
    for (const { event, data } of events) assert.equal(data.type, event);
    // No tools: a side question, answered with plain text.
    const text = events.filter((e) => e.event === "content_block_delta")
      .map((e) => e.data.delta.text).join("");
    assert.equal(text, "Create `a.txt`");
    assert.equal(events[0]!.data.message.model, "claude-haiku-4-5");
    assert.equal(events[6]!.data.delta.stop_reason, "end_turn");
    assert.equal(events[6]!.data.usage.output_tokens, Math.ceil(text.length / 4));
  });

  await t.step("count_tokens: the same count, growing with the request", async () => {
    const small = await (await post("/v1/messages/count_tokens", TASK)).json();
    assert.deepEqual(small, { input_tokens: sizeOf(TASK) });
    const bigger = { ...TASK, messages: [{ role: "user", content: "x".repeat(4_000) }] };
    const big = await (await post("/v1/messages/count_tokens", bigger)).json();
    assert.ok(big.input_tokens > small.input_tokens + 900);
  });

  await t.step("a model the service does not know: 404 not_found_error naming it", async () => {
    for (const path of ["/v1/messages", "/v1/messages/count_tokens"]) {
      const response = await post(path, { ...TASK, model: "claude-nonexistent-9" });
      assert.equal(response.status, 404);
      assert.deepEqual(await errorBody(response), {
        type: "error",
        error: { type: "not_found_error", message: "model: claude-nonexistent-9" },
      });
    }
  });

  /** A request of its own session: the failures' counts start again. */
  const inSession = (session: string, body: unknown) =>
    post("/v1/messages", body, { ...KEY, "x-claude-code-session-id": session });

  await t.step(
    "[model:parallel]: the calls that need no other's result, in one message",
    async () => {
      const response = await post("/v1/messages", marked("[model:parallel] run `make` and"));
      const message = await response.json();
      assert.equal(message.stop_reason, "tool_use");
      assert.deepEqual(
        message.content.map((
          b: { type: string; name: string; input: unknown },
        ) => [b.name, b.input]),
        [["Bash", { command: "make", description: "Run make" }], ["Read", {
          file_path: "/w/a.txt",
        }]],
      );
      assert.equal(new Set(message.content.map((b: { id: string }) => b.id)).size, 2);
    },
  );

  await t.step("[model:overloaded=1]: 529 first, counted per session", async () => {
    const body = marked("[model:overloaded=1]");
    const byHeader = await inSession("session-a", body);
    assert.equal(byHeader.status, 529);
    assert.deepEqual(await errorBody(byHeader), {
      type: "error",
      error: { type: "overloaded_error", message: "Overloaded" },
    });
    assert.equal((await (await inSession("session-a", body)).json()).type, "message");
    // The CLI also names its session in metadata.user_id: another session, its own count.
    const userId = JSON.stringify({ device_id: "d", account_uuid: "", session_id: "session-b" });
    const byMetadata = { ...body, metadata: { user_id: userId } };
    const first = await post("/v1/messages", byMetadata);
    assert.equal(first.status, 529);
    await first.body?.cancel();
    assert.equal((await (await post("/v1/messages", byMetadata)).json()).type, "message");
  });

  await t.step("[model:rate-limited]: 429 with retry-after and anthropic-ratelimit-*", async () => {
    const response = await inSession("session-c", marked("[model:rate-limited]"));
    assert.equal(response.status, 429);
    const headers = Object.fromEntries(response.headers);
    assert.equal(headers["retry-after"], "1");
    const reset = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;
    for (const limit of ["requests", "tokens", "input-tokens", "output-tokens"]) {
      assert.match(headers[`anthropic-ratelimit-${limit}-limit`]!, /^\d+$/);
      assert.match(headers[`anthropic-ratelimit-${limit}-remaining`]!, /^\d+$/);
      assert.match(headers[`anthropic-ratelimit-${limit}-reset`]!, reset);
    }
    assert.equal(headers["anthropic-ratelimit-requests-remaining"], "0");
    const body = await errorBody(response) as { error: { type: string } };
    assert.equal(body.error.type, "rate_limit_error");
  });

  await t.step("[model:spend-limit]: 429 with its error_code, not to be retried", async () => {
    const response = await inSession("session-d", marked("[model:spend-limit]"));
    assert.equal(response.status, 429);
    assert.equal(response.headers.get("x-should-retry"), "false");
    assert.equal(response.headers.get("retry-after"), null);
    const body = await errorBody(response) as {
      error: { type: string; message: string; details: unknown };
    };
    assert.equal(body.error.type, "rate_limit_error");
    assert.match(body.error.message, /^You have reached your specified API usage limits\./);
    assert.deepEqual(body.error.details, { error_code: "enforced_spend_limit_reached" });
  });

  await t.step("[model:stream-error]: the stream starts, then an error event ends it", async () => {
    const body = marked("[model:stream-error]", { stream: true });
    const response = await inSession("session-e", body);
    assert.equal(response.status, 200);
    const events = sseEvents(await response.text());
    assert.deepEqual(events.map((e) => e.event), [
      "message_start",
      "ping",
      "content_block_start",
      "content_block_delta",
      "error",
    ]);
    assert.deepEqual(events.at(-1)!.data, {
      type: "error",
      error: { type: "overloaded_error", message: "Overloaded" },
    });
    // Not streamed, the same failure is the whole answer.
    const whole = await inSession("session-e", { ...body, stream: false });
    assert.equal(whole.status, 529);
    await whole.body?.cancel();
  });

  await t.step(
    "[model:cache]: message_start and message_delta carry the cache counts",
    async () => {
      const response = await post("/v1/messages", marked("[model:cache]", { stream: true }));
      const events = sseEvents(await response.text());
      const started = events[0]!.data.message.usage;
      const ended = events.find((e) => e.event === "message_delta")!.data.usage;
      assert.ok(started.cache_read_input_tokens > 0 && started.cache_creation_input_tokens > 0);
      assert.deepEqual({ ...ended, output_tokens: 1 }, started);
    },
  );

  await t.step(
    "[model:slow=600]: the pieces spread over the time; a client may leave",
    async () => {
      const body = marked("[model:slow=600]", { stream: true, tools: undefined });
      const started = Date.now();
      const events = sseEvents(await (await post("/v1/messages", body)).text());
      assert.ok(Date.now() - started >= 550, `${Date.now() - started} ms`);
      const deltas = events.filter((e) => e.event === "content_block_delta");
      assert.equal(deltas.length, 3);
      assert.equal(deltas.map((e) => e.data.delta.text).join(""), "Create `a.txt`");
      // A client may stop reading mid-answer (an interrupted turn); the stand-in goes on serving.
      const left = await post("/v1/messages", marked("[model:slow=60000]", { stream: true }));
      const reader = left.body!.getReader();
      assert.match(new TextDecoder().decode((await reader.read()).value), /^event: message_start/);
      await reader.cancel();
      const next = await fetch(`${model.url}/api/hello`);
      assert.equal(next.status, 200);
      await next.body?.cancel();
    },
  );

  await t.step("requests() counts every answer; the signal stops the server", async () => {
    assert.equal(model.requests(), 2 + 2 + 3 + 4 + 1 + 1 + 2 + 2 + 1 + 4 + 1 + 1 + 2 + 1 + 3);
    controller.abort();
    await model.close();
    await assert.rejects(fetch(`${model.url}/api/hello`));
  });
});
