/**
 * The model stand-in's deterministic team, without the CLI: conversations are played against an
 * in-memory workspace that answers Read, Write and Bash the way Claude Code 2.1.332 does (Read's
 * `<n>\t<line>` numbering, "File does not exist.", a hook's refusal, the `<system-reminder>`
 * the CLI appends to every tool result).
 */
import assert from "node:assert/strict";
import {
  conflictCommand,
  fileContentFromRead,
  type Move,
  parsePersona,
  parsePrompt,
  planNextMove,
  relativeFilePath,
  shellQuote,
  taskWork,
} from "../../local/model_standin/plan.ts";

const CWD = "/work/repo";
const TOOLS = ["Agent", "Bash", "Edit", "Read", "Write"].map((name) => ({ name }));
const REMINDER = "\n\n<system-reminder>\n<total_tokens>14999880 tokens left</total_tokens>\n" +
  "</system-reminder>";

function persona(name: string, lead = false): string {
  return [
    `# You are ${name}, an agent of this project's team`,
    lead ? "You are the lead of the team." : "The lead of the team is lead.",
    "Your teammates: lead, builder, reviewer.",
  ].join("\n");
}

/** What Read answers for a file's text, as the CLI 2.1.332 formats it. */
function readResult(content: string): string {
  if (content === "") {
    return "<system-reminder>Warning: the file exists but the contents are empty.</system-reminder>";
  }
  const lines = content.split("\n");
  // An empty last line (the text ends with a newline) is numbered without a tab.
  return lines.map((line, i) =>
    i === lines.length - 1 && line === "" ? `${i + 1}` : `${i + 1}\t${line}`
  )
    .join("\n");
}

interface Played {
  moves: Move[];
  answer: string;
  files: Map<string, string>;
  commands: string[];
}

/**
 * Runs the plan to its answer: each tool call is answered by the workspace and appended to the
 * conversation as the CLI does, then the whole conversation is asked again.
 */
function play(
  prompt: string,
  options: {
    system?: string;
    files?: Record<string, string>;
    refuse?: (command: string) => string | undefined;
    tools?: { name: string }[];
  } = {},
): Played {
  const files = new Map(Object.entries(options.files ?? {}).map(([p, c]) => [`${CWD}/${p}`, c]));
  const commands: string[] = [];
  const messages: { role: string; content: unknown }[] = [{
    role: "user",
    content: [
      {
        type: "text",
        text: `<system-reminder>\n# Environment\n - Primary working directory: ${CWD}\n` +
          "</system-reminder>",
      },
      { type: "text", text: prompt },
    ],
  }];
  const system = [
    { type: "text", text: "You are a Claude agent, built on Anthropic's Claude Agent SDK." },
    { type: "text", text: `Some instructions.\n\n${options.system ?? persona("builder")}` },
  ];
  const moves: Move[] = [];
  for (let turn = 0; turn < 50; turn++) {
    const move = planNextMove({ system, messages, tools: options.tools ?? TOOLS });
    moves.push(move);
    if (move.type === "text") return { moves, answer: move.text, files: relative(files), commands };
    const id = `toolu_${turn}`;
    messages.push({
      role: "assistant",
      content: [{ type: "tool_use", id, name: move.name, input: move.input }],
    });
    const { text, isError } = execute(move, files, commands, options.refuse);
    messages.push({
      role: "user",
      content: [{
        type: "tool_result",
        tool_use_id: id,
        content: text + REMINDER,
        is_error: isError,
      }],
    });
  }
  throw new Error("the plan did not end in 50 turns");
}

function execute(
  move: Extract<Move, { type: "tool_use" }>,
  files: Map<string, string>,
  commands: string[],
  refuse: ((command: string) => string | undefined) | undefined,
): { text: string; isError: boolean } {
  const path = String(move.input.file_path);
  switch (move.name) {
    case "Read": {
      const content = files.get(path);
      if (content === undefined) {
        return {
          text: `File does not exist. Note: your current working directory is ${CWD}.`,
          isError: true,
        };
      }
      return { text: readResult(content), isError: false };
    }
    case "Write":
      files.set(path, String(move.input.content));
      return { text: `File created successfully at: ${path}`, isError: false };
    case "Bash": {
      const command = String(move.input.command);
      const refused = refuse?.(command);
      if (refused) return { text: `PreToolUse:Bash hook error: ${refused}`, isError: true };
      commands.push(command);
      return { text: "(Bash completed with no output)", isError: false };
    }
  }
  throw new Error(`unexpected tool ${move.name}`);
}

function relative(files: Map<string, string>): Map<string, string> {
  return new Map([...files].map(([path, content]) => [path.slice(CWD.length + 1), content]));
}

function toolNames(moves: Move[]): string[] {
  return moves.flatMap((m) => (m.type === "tool_use" ? [m.name] : []));
}

Deno.test("parsePersona() reads the name, the lead line and the teammates anywhere in the system prompt", () => {
  assert.deepEqual(parsePersona(`intro\n\n${persona("lead", true)}\n## Soul\n...`), {
    name: "lead",
    lead: true,
    teammates: ["lead", "builder", "reviewer"],
  });
  assert.deepEqual(parsePersona(persona("builder")), {
    name: "builder",
    lead: false,
    teammates: ["lead", "builder", "reviewer"],
  });
  assert.deepEqual(parsePersona("no persona here"), { name: "agent", lead: false, teammates: [] });
});

Deno.test("parsePrompt() tells a task (with its header) from a conflict (with its files)", () => {
  assert.deepEqual(parsePrompt("Task 42 from lead:\nWrite `a.md`\nand more"), {
    kind: "task",
    id: "42",
    from: "lead",
    text: "Write `a.md`\nand more",
  });
  assert.deepEqual(parsePrompt("just do it"), {
    kind: "task",
    id: undefined,
    from: undefined,
    text: "just do it",
  });
  const conflict = [
    "Your last push conflicted with what others pushed to main.",
    "Resolve the rebase conflict in these files:",
    "- src/a.ts",
    "- docs/it's here.md",
    "Keep both sides' intent, remove every conflict marker.",
  ].join("\n");
  assert.deepEqual(parsePrompt(conflict), {
    kind: "conflict",
    files: ["src/a.ts", "docs/it's here.md"],
  });
});

Deno.test("taskWork() takes run `...` as commands and other backticked relative paths as files", () => {
  assert.deepEqual(
    taskWork("Edit `src/a.ts` and `./README.md`, run `deno test -A` then Run `git status`"),
    { commands: ["deno test -A", "git status"], paths: ["src/a.ts", "README.md"] },
  );
  assert.deepEqual(taskWork("`/etc/passwd` `../x.txt` `Makefile` `v1.2` `foo()` `src/a.ts`"), {
    commands: [],
    paths: ["src/a.ts"],
  });
  assert.equal(relativeFilePath(".env.example"), ".env.example");
  assert.equal(relativeFilePath(".gitignore"), undefined);
  assert.equal(relativeFilePath("a b.txt"), undefined);
});

Deno.test("fileContentFromRead() strips the CLI's line numbers and keeps the text exactly", () => {
  for (
    const content of [
      "alpha\nbeta\n",
      "no newline at the end",
      "tabs\tinside\n\n  indented\n",
      "\n\n",
      "x\n\n<system-reminder>not the CLI's</system-reminder>\n",
      "",
      Array.from({ length: 120 }, (_, i) => `line ${i}`).join("\n") + "\n",
    ]
  ) {
    assert.equal(fileContentFromRead(readResult(content)), content);
  }
  assert.equal(fileContentFromRead("1\talpha\n2\tbeta\n3"), "alpha\nbeta\n");
  assert.equal(fileContentFromRead("something else"), undefined);
});

Deno.test("a task naming a file: Read, then Write creating it with the agent's line", () => {
  const played = play("Task 1 from lead:\nCreate `src/hello.txt` with a greeting.\nBe brief.");
  assert.deepEqual(toolNames(played.moves), ["Read", "Write"]);
  assert.deepEqual(played.moves[0], {
    type: "tool_use",
    name: "Read",
    input: { file_path: `${CWD}/src/hello.txt` },
  });
  assert.equal(
    played.files.get("src/hello.txt"),
    "builder: Create `src/hello.txt` with a greeting.\n",
  );
  assert.equal(
    played.answer,
    "Done: Create `src/hello.txt` with a greeting. Changed src/hello.txt.",
  );
});

Deno.test("a file that exists keeps its content, and the line is added at the end", () => {
  const played = play("Task 2 from lead:\nReview `src/hello.txt` and `b.md`", {
    files: { "src/hello.txt": "first\n\tsecond", "b.md": "" },
  });
  assert.deepEqual(toolNames(played.moves), ["Read", "Write", "Read", "Write"]);
  assert.equal(
    played.files.get("src/hello.txt"),
    "first\n\tsecond\nbuilder: Review `src/hello.txt` and `b.md`\n",
  );
  assert.equal(played.files.get("b.md"), "builder: Review `src/hello.txt` and `b.md`\n");
  assert.equal(
    played.answer,
    "Done: Review `src/hello.txt` and `b.md`. Changed src/hello.txt, b.md.",
  );
});

Deno.test("commands run first, in order, as Bash calls; the answer names them", () => {
  const played = play("Task 3 from lead:\nrun `git status` and run `touch x.txt`, then fix `a.ts`");
  assert.deepEqual(toolNames(played.moves), ["Bash", "Bash", "Read", "Write"]);
  assert.deepEqual(played.commands, ["git status", "touch x.txt"]);
  assert.deepEqual([...played.files.keys()], ["a.ts"]);
  assert.equal(
    played.answer,
    "Done: run `git status` and run `touch x.txt`, then fix `a.ts`. " +
      "Changed a.ts; ran git status, touch x.txt.",
  );
  const only = play("Task 4 from lead:\nrun `make`");
  assert.equal(only.answer, "Done: run `make`. Ran make.");
  assert.equal(only.files.size, 0);
});

Deno.test("no command and no file: the line goes to NOTES.md", () => {
  const played = play("Task 5 from reviewer:\nThink about the naming.", {
    system: persona("reviewer"),
    files: { "NOTES.md": "# Notes\n" },
  });
  assert.equal(played.files.get("NOTES.md"), "# Notes\nreviewer: Think about the naming.\n");
  assert.equal(played.answer, "Done: Think about the naming. Changed NOTES.md.");
});

Deno.test("the lead hands a task with @mentions on, writing only NOTES.md", () => {
  const played = play("Task 6 from human:\nPlease @builder add `docs/x.md` and run `make`", {
    system: persona("lead", true),
  });
  assert.deepEqual(toolNames(played.moves), ["Read", "Write"]);
  assert.deepEqual(played.commands, []);
  assert.deepEqual([...played.files.keys()], ["NOTES.md"]);
  assert.equal(
    played.files.get("NOTES.md"),
    'lead: handed "Please add `docs/x.md` and run `make`" to builder\n',
  );
  assert.deepEqual(played.answer.split("\n"), [
    "Done: Please @builder add `docs/x.md` and run `make`. Changed NOTES.md.",
    "@builder Please add `docs/x.md` and run `make`",
  ]);
});

Deno.test("the lead hands on to every mentioned teammate, one line each", () => {
  const played = play("Task 7 from human:\n@builder, @reviewer: look at\nthe login page", {
    system: persona("lead", true),
  });
  assert.deepEqual(played.answer.split("\n").slice(1), [
    "@builder look at the login page",
    "@reviewer look at the login page",
  ]);
  assert.equal(
    played.files.get("NOTES.md"),
    'lead: handed "look at the login page" to builder\n' +
      'lead: handed "look at the login page" to reviewer\n',
  );
});

Deno.test("mentions do not hand on: from a non-lead, of the lead itself, of strangers", () => {
  const builder = play("Task 8 from lead:\nask @reviewer about `a.txt`");
  assert.deepEqual([...builder.files.keys()], ["a.txt"]);
  const lead = play("Task 9 from human:\n@lead and @mallory write `b.txt`", {
    system: persona("lead", true),
  });
  assert.deepEqual([...lead.files.keys()], ["b.txt"]);
  assert.ok(!lead.answer.includes("\n@"));
});

Deno.test("a refused command does not stop the plan; the answer says why", () => {
  const played = play("Task 10 from lead:\nrun `git push` then run `ls` and note `n.md`", {
    refuse: (command) =>
      command === "git push"
        ? "[/hooks/approve.sh]: A person rejected this command.\nmore"
        : undefined,
  });
  assert.deepEqual(played.commands, ["ls"]);
  assert.deepEqual([...played.files.keys()], ["n.md"]);
  assert.deepEqual(played.answer.split("\n"), [
    "Done: run `git push` then run `ls` and note `n.md`. Changed n.md; ran ls.",
    "Could not run git push: A person rejected this command.",
  ]);
});

Deno.test("a conflict: one sed per file, quoted for the shell, and the files named", () => {
  const played = play(
    "Resolve the rebase conflict in these files:\n- src/a.ts\n- it's.md\nKeep both sides.",
  );
  assert.deepEqual(played.commands, [conflictCommand("src/a.ts"), conflictCommand("it's.md")]);
  assert.equal(
    conflictCommand("it's.md"),
    `sed -i -e '/^<<<<<<< /d' -e '/^=======$/d' -e '/^>>>>>>> /d' -- 'it'\\''s.md'`,
  );
  assert.equal(played.answer, "Resolved the conflict in src/a.ts, it's.md.");
  assert.equal(shellQuote("a'b"), `'a'\\''b'`);
});

Deno.test("a file that cannot be read is left alone and named in the answer", () => {
  const refusedRead = planNextMove({
    messages: [
      { role: "user", content: "Task 12 from lead:\nupdate `big.log`" },
      { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "Read", input: {} }] },
      {
        role: "user",
        content: [{
          type: "tool_result",
          tool_use_id: "t1",
          is_error: true,
          content: "File content (300KB) exceeds maximum allowed size (256KB)." + REMINDER,
        }],
      },
    ],
    tools: TOOLS,
  });
  assert.deepEqual(refusedRead, {
    type: "text",
    text: "Done: update `big.log`.\n" +
      "Could not change big.log: File content (300KB) exceeds maximum allowed size (256KB).",
  });
});

Deno.test("without the tools it needs, the plan says so instead of calling them", () => {
  const played = play("Task 13 from lead:\nrun `make` and fix `a.ts`", {
    tools: [{ name: "Agent" }],
  });
  assert.deepEqual(played.moves.length, 1);
  assert.deepEqual(played.answer.split("\n"), [
    "Done: run `make` and fix `a.ts`.",
    "Could not run make: the Bash tool is not available.",
    "Could not change a.ts: the Read and Write tools are needed.",
  ]);
});

Deno.test("a request without tools (a side question) gets a short plain answer", () => {
  const move = planNextMove({
    messages: [{ role: "user", content: "Task 14 from lead:\nWrite the release notes" }],
  });
  assert.deepEqual(move, { type: "text", text: "Write the release notes" });
});

Deno.test("the plan follows the last prompt when a session is resumed with a new one", () => {
  const first = play("Task 15 from lead:\nnote `one.md`");
  assert.equal(first.files.size, 1);
  const move = planNextMove({
    messages: [
      { role: "user", content: "Task 15 from lead:\nnote `one.md`" },
      { role: "assistant", content: [{ type: "text", text: "Done." }] },
      { role: "user", content: [{ type: "text", text: "Task 16 from lead:\nrun `ls`" }] },
    ],
    tools: TOOLS,
  });
  assert.equal(move.type, "tool_use");
  assert.deepEqual(move.type === "tool_use" && move.input, {
    command: "ls",
    description: "Run ls",
  });
});
