/**
 * The stand-in's git: every repository is a bare repository on disk and everything the REST API
 * and the page say about commits comes from git itself (refs, merge-tree mergeability, logs,
 * diffs, real merge commits). Each command names its repository with `--git-dir` (no discovery:
 * a root inside another repository's work tree never reaches that repository), runs with no
 * system or global configuration (what is on this machine does not change answers) and a time
 * limit.
 */
import { ZERO_SHA } from "./state.ts";

const TIMEOUT_MS = 30_000;

/** The environment every git command gets: no configuration from the machine or the user. */
export const GIT_ENV: Record<string, string> = {
  GIT_CONFIG_NOSYSTEM: "1",
  GIT_CONFIG_GLOBAL: "/dev/null",
  GIT_TERMINAL_PROMPT: "0",
};

export interface Person {
  name: string;
  email: string;
}

export interface GitResult {
  code: number;
  stdout: string;
  stderr: string;
}

export async function git(
  dir: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<GitResult> {
  const output = await new Deno.Command("git", {
    args: ["--git-dir", dir, ...args],
    env: { ...GIT_ENV, ...env },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(TIMEOUT_MS),
  }).output();
  const decoder = new TextDecoder();
  return {
    code: output.code,
    stdout: decoder.decode(output.stdout),
    stderr: decoder.decode(output.stderr),
  };
}

/** Runs git and answers its trimmed output, or throws with git's own words. */
export async function gitOk(
  dir: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<string> {
  const result = await git(dir, args, env);
  if (result.code !== 0) {
    throw new Error(`git ${args.join(" ")} failed (${result.code}): ${result.stderr.trim()}`);
  }
  return result.stdout.trim();
}

const authorEnv = (person: Person, at = new Date()): Record<string, string> => ({
  GIT_AUTHOR_NAME: person.name,
  GIT_AUTHOR_EMAIL: person.email,
  GIT_AUTHOR_DATE: at.toISOString(),
  GIT_COMMITTER_NAME: person.name,
  GIT_COMMITTER_EMAIL: person.email,
  GIT_COMMITTER_DATE: at.toISOString(),
});

/** A new bare repository whose HEAD names `defaultBranch`. */
export async function initBare(dir: string, defaultBranch: string): Promise<void> {
  await Deno.mkdir(dir, { recursive: true });
  await gitOk(dir, ["init", "--bare", "--quiet", `--initial-branch=${defaultBranch}`, dir]);
}

/** One commit holding `files` (path → content) on `branch`, made without a work tree. */
export async function commitFiles(
  dir: string,
  branch: string,
  files: Record<string, string>,
  message: string,
  author: Person,
): Promise<string> {
  const index = await Deno.makeTempFile({ prefix: "github-standin-index-" });
  await Deno.remove(index);
  try {
    const env = { GIT_INDEX_FILE: index };
    const parent = await resolve(dir, `refs/heads/${branch}`);
    if (parent) await gitOk(dir, ["read-tree", parent], env);
    for (const [path, content] of Object.entries(files)) {
      const blob = await hashObject(dir, content);
      await gitOk(dir, ["update-index", "--add", "--cacheinfo", `100644,${blob},${path}`], env);
    }
    const tree = await gitOk(dir, ["write-tree"], env);
    const commit = await gitOk(
      dir,
      ["commit-tree", tree, ...(parent ? ["-p", parent] : []), "-m", message],
      authorEnv(author),
    );
    await gitOk(dir, ["update-ref", `refs/heads/${branch}`, commit, parent ?? ZERO_SHA]);
    return commit;
  } finally {
    await Deno.remove(index).catch(() => {});
  }
}

async function hashObject(dir: string, content: string): Promise<string> {
  const child = new Deno.Command("git", {
    args: ["--git-dir", dir, "hash-object", "-w", "--stdin"],
    env: GIT_ENV,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(TIMEOUT_MS),
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(content));
  await writer.close();
  const output = await child.output();
  if (!output.success) throw new Error(new TextDecoder().decode(output.stderr));
  return new TextDecoder().decode(output.stdout).trim();
}

/** The commit a ref, branch or sha names, or undefined. */
export async function resolve(dir: string, ref: string): Promise<string | undefined> {
  const result = await git(dir, ["rev-parse", "--verify", "--quiet", `${ref}^{commit}`]);
  return result.code === 0 ? result.stdout.trim() : undefined;
}

/** Every ref and the object it points at. */
export async function listRefs(dir: string): Promise<Map<string, string>> {
  const out = await gitOk(dir, ["for-each-ref", "--format=%(refname) %(objectname)"]);
  const refs = new Map<string, string>();
  for (const line of out.split("\n").filter(Boolean)) {
    const [name, sha] = line.split(" ");
    refs.set(name!, sha!);
  }
  return refs;
}

/**
 * Whether `head` merges cleanly into `base`, by git's own merge (`merge-tree --write-tree`, git
 * 2.38 and later), and the tree the merge would have.
 */
export async function mergeTree(
  dir: string,
  base: string,
  head: string,
): Promise<{ clean: boolean; tree: string }> {
  const result = await git(dir, ["merge-tree", "--write-tree", "--no-messages", base, head]);
  if (result.code > 1) throw new Error(`git merge-tree failed: ${result.stderr.trim()}`);
  return { clean: result.code === 0, tree: result.stdout.split("\n")[0]!.trim() };
}

/** A merge commit of `head` into `base` with the tree merge-tree wrote. */
export async function mergeCommit(
  dir: string,
  tree: string,
  base: string,
  head: string,
  message: string,
  committer: Person,
): Promise<string> {
  return await gitOk(
    dir,
    ["commit-tree", tree, "-p", base, "-p", head, "-m", message],
    authorEnv(committer),
  );
}

/** Moves a ref only if it still points where we saw it (`update-ref`'s compare-and-swap). */
export async function updateRef(
  dir: string,
  ref: string,
  to: string,
  from: string,
): Promise<boolean> {
  return (await git(dir, ["update-ref", ref, to, from])).code === 0;
}

export async function deleteRef(dir: string, ref: string, from: string): Promise<boolean> {
  return (await git(dir, ["update-ref", "-d", ref, from])).code === 0;
}

export async function isAncestor(dir: string, ancestor: string, of: string): Promise<boolean> {
  return (await git(dir, ["merge-base", "--is-ancestor", ancestor, of])).code === 0;
}

export interface Commit {
  sha: string;
  tree: string;
  author: Person & { date: string };
  committer: Person & { date: string };
  message: string;
}

/** Commits reachable from `include` and from none of `exclude`, oldest first. */
export async function log(
  dir: string,
  include: string,
  exclude: string[],
  max = 250,
): Promise<Commit[]> {
  const format = ["%H", "%T", "%an", "%ae", "%aI", "%cn", "%ce", "%cI", "%B"].join("%x1f") +
    "%x1e";
  const out = await gitOk(dir, [
    "log",
    "--reverse",
    `--max-count=${max}`,
    `--format=${format}`,
    include,
    ...exclude.map((sha) => `^${sha}`),
    "--",
  ]);
  return out.split("\x1e").map((s) => s.replace(/^\n/, "")).filter(Boolean).map((record) => {
    const [sha, tree, an, ae, ad, cn, ce, cd, message] = record.split("\x1f");
    return {
      sha: sha!,
      tree: tree!,
      author: { name: an!, email: ae!, date: ad! },
      committer: { name: cn!, email: ce!, date: cd! },
      message: message!.replace(/\n+$/, ""),
    };
  });
}

/** What a commit added, removed and modified, by path (`added`/`removed`/`modified` of a push). */
export async function changedPaths(
  dir: string,
  sha: string,
): Promise<{ added: string[]; removed: string[]; modified: string[] }> {
  const out = await gitOk(dir, [
    "diff-tree",
    "--root",
    "-r",
    "--no-commit-id",
    "--name-status",
    sha,
  ]);
  const paths = { added: [] as string[], removed: [] as string[], modified: [] as string[] };
  for (const line of out.split("\n").filter(Boolean)) {
    const [status, path] = line.split("\t");
    const list = status === "A" ? paths.added : status === "D" ? paths.removed : paths.modified;
    list.push(path!);
  }
  return paths;
}

export interface DiffStat {
  additions: number;
  deletions: number;
  changedFiles: number;
}

/** Lines added and deleted and files changed from the merge base of `base` and `head` to `head`. */
export async function diffStat(dir: string, base: string, head: string): Promise<DiffStat> {
  const out = await gitOk(dir, ["diff", "--numstat", `${base}...${head}`]);
  const stat: DiffStat = { additions: 0, deletions: 0, changedFiles: 0 };
  for (const line of out.split("\n").filter(Boolean)) {
    const [added, deleted] = line.split("\t");
    stat.changedFiles++;
    stat.additions += Number(added) || 0;
    stat.deletions += Number(deleted) || 0;
  }
  return stat;
}

/** The pull request's diff as GitHub shows it: from the merge base to the head. */
export async function diff(dir: string, base: string, head: string): Promise<string> {
  return (await git(dir, ["diff", `${base}...${head}`])).stdout;
}

/** How many commits `head` has that `base` has not. */
export async function countCommits(dir: string, base: string, head: string): Promise<number> {
  return Number(await gitOk(dir, ["rev-list", "--count", `${base}..${head}`]));
}

/** One file of a pull request's diff, as `pulls/list-files` describes it. */
export interface DiffFile {
  filename: string;
  status: "added" | "removed" | "modified" | "renamed";
  additions: number;
  deletions: number;
  /** The unified diff's hunks (from the first `@@`); absent for a binary file. */
  patch: string | undefined;
  /** The lines of the head's version the hunks show (added or context): where comments go. */
  headLines: Set<number>;
}

/** The pull request's diff (merge base of `base` and `head` to `head`), file by file. */
export async function diffFiles(dir: string, base: string, head: string): Promise<DiffFile[]> {
  const text = await diff(dir, base, head);
  const files: DiffFile[] = [];
  for (const section of text.split(/^diff --git /m).slice(1)) {
    const lines = section.split("\n");
    const hunkAt = lines.findIndex((l) => l.startsWith("@@"));
    const header = hunkAt < 0 ? lines : lines.slice(0, hunkAt);
    const newPath = header.find((l) => l.startsWith("+++ b/"))?.slice(6);
    const oldPath = header.find((l) => l.startsWith("--- a/"))?.slice(6);
    const named = /^a\/(.+) b\/(.+)$/.exec(lines[0] ?? "");
    const file: DiffFile = {
      filename: newPath ?? oldPath ?? named?.[2] ?? "",
      status: header.some((l) => l.startsWith("new file mode"))
        ? "added"
        : header.some((l) => l.startsWith("deleted file mode"))
        ? "removed"
        : header.some((l) => l.startsWith("rename from"))
        ? "renamed"
        : "modified",
      additions: 0,
      deletions: 0,
      patch: undefined,
      headLines: new Set(),
    };
    if (hunkAt >= 0) {
      const hunks = lines.slice(hunkAt);
      while (hunks.at(-1) === "") hunks.pop();
      file.patch = hunks.join("\n");
      let next = 0;
      for (const line of hunks) {
        const start = /^@@ -\S+ \+(\d+)/.exec(line);
        if (start) {
          next = Number(start[1]);
        } else if (line.startsWith("-")) {
          file.deletions++;
        } else if (line.startsWith("+") || line.startsWith(" ")) {
          if (line.startsWith("+")) file.additions++;
          file.headLines.add(next++);
        }
      }
    }
    files.push(file);
  }
  return files;
}
