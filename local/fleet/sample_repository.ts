/**
 * A local project created without a repository gets one (contract §11): a bare repository under
 * `.local/repos/<project_id>.git`, seeded with a small sample project, so its team has something
 * to work on and the dashboard shows real commits. The project then names it as any repository
 * (`repository_url`), and its VM learns it from the manifest like any other.
 */
export const SAMPLE_FILES: Record<string, string> = {
  "README.md": "# Sample project\n\nA small project for the local agent team to work on.\n",
  "NOTES.md": "# Notes\n\nThe team writes down here what it did and what comes next.\n",
  "src/greeting.js": "export function greet(name) {\n  return `Hello, ${name}!`;\n}\n",
  "test/greeting.test.js": 'import { greet } from "../src/greeting.js";\n\n' +
    'if (greet("team") !== "Hello, team!") throw new Error("greet is broken");\n',
  "package.json": JSON.stringify(
    {
      name: "sample-project",
      private: true,
      type: "module",
      scripts: { test: "node test/greeting.test.js" },
    },
    null,
    2,
  ) + "\n",
  ".gitignore": ".cache/\nnode_modules/\n",
  // Contract §20: the clone is prepared once (and again when this file or package.json changes),
  // and every session's work is proven by the check before it is pushed. Both are fast.
  ".agents/setup.sh": [
    "#!/usr/bin/env bash",
    "# Prepares a clone of the sample project before its first session (docs/vm-agent.md).",
    "# agents:depends-on package.json",
    "set -euo pipefail",
    'echo "node $(node --version)"',
    "mkdir -p .cache",
    "date -u +%Y-%m-%dT%H:%M:%SZ > .cache/prepared-at",
    'echo "prepared: .cache/prepared-at"',
    "",
  ].join("\n"),
  ".agents/check.sh": [
    "#!/usr/bin/env bash",
    "# Proves a change to the sample project: its tests (docs/vm-agent.md).",
    "set -euo pipefail",
    "node test/greeting.test.js",
    'echo "greeting tests passed"',
    "",
  ].join("\n"),
};

const AUTHOR = {
  GIT_AUTHOR_NAME: "platform",
  GIT_AUTHOR_EMAIL: "platform@vm-service.invalid",
  GIT_COMMITTER_NAME: "platform",
  GIT_COMMITTER_EMAIL: "platform@vm-service.invalid",
};

/** Creates the seeded bare repository at `path` unless it exists; answers its absolute path. */
export async function ensureSampleRepository(path: string, branch = "main"): Promise<string> {
  const absolute = await Deno.realPath(path.slice(0, path.lastIndexOf("/")) || ".")
    .catch(async () => {
      await Deno.mkdir(path.slice(0, path.lastIndexOf("/")), { recursive: true });
      return await Deno.realPath(path.slice(0, path.lastIndexOf("/")));
    }) + path.slice(path.lastIndexOf("/"));
  try {
    await Deno.stat(`${absolute}/HEAD`);
    return absolute;
  } catch {
    // not there yet
  }
  const work = await Deno.makeTempDir({ prefix: "sample-repo-" });
  try {
    await git(["init", "--quiet", "--bare", `--initial-branch=${branch}`, absolute]);
    await git(["init", "--quiet", `--initial-branch=${branch}`, work]);
    for (const [name, text] of Object.entries(SAMPLE_FILES)) {
      const file = `${work}/${name}`;
      await Deno.mkdir(file.slice(0, file.lastIndexOf("/")), { recursive: true });
      await Deno.writeTextFile(file, text);
    }
    await git(["-C", work, "add", "--all"]);
    await git(["-C", work, "commit", "--quiet", "-m", "A sample project to start from"]);
    await git(["-C", work, "push", "--quiet", absolute, `HEAD:refs/heads/${branch}`]);
  } finally {
    await Deno.remove(work, { recursive: true });
  }
  return absolute;
}

async function git(args: string[]): Promise<void> {
  const out = await new Deno.Command("git", {
    args,
    env: AUTHOR,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) {
    throw new Error(`git ${args[0]} failed: ${new TextDecoder().decode(out.stderr).trim()}`);
  }
}
