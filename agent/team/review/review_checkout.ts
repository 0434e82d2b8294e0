/**
 * The review session's checkout (contract §21): the pull request's head in a work tree of its own
 * (`<agent>/review/`, never the agent's clone), with a runner's git directory of its own
 * (`<agent>/review.git`, root's), every command through agent/git/runner_git.ts (§19). The runner
 * fetches the branch and its base, checks the head out detached and computes the diff; the
 * session's user gets the work tree (and a repository of its own in it, so `git diff` and `log`
 * work); after the session nothing of it is read: no commit, no push, the work tree removed.
 */
import { RunnerGit } from "../../git/runner_git.ts";
import type { ReviewRequest } from "./review_request.ts";

export interface ReviewCheckoutOptions {
  /** The agent's directory: the checkout is `<home>/review`, its runner's git `<home>/review.git`. */
  home: string;
  agent: string;
  remote: string;
  token?: string;
  session?: { runAs: string[]; home: string };
}

export class ReviewCheckout {
  readonly dir: string;
  readonly #runner: RunnerGit;
  readonly #remote: string;

  constructor(o: ReviewCheckoutOptions) {
    this.dir = `${o.home}/review`;
    this.#runner = new RunnerGit({
      gitDir: `${o.home}/review.git`,
      workTree: this.dir,
      agent: o.agent,
      remote: o.remote,
      ...(o.token ? { token: o.token } : {}),
      ...(o.session ? { session: o.session } : {}),
    });
    this.#remote = o.remote;
  }

  /**
   * The head checked out in a fresh work tree (what an earlier review left is gone first).
   * Answers the diff against the base, from their merge base. Throws when the remote cannot be
   * read or no longer has the head.
   */
  async prepare(request: ReviewRequest): Promise<string> {
    await this.discard();
    await this.#runner.init();
    await Deno.mkdir(this.dir, { recursive: true });
    const current = await this.#runner.run(["remote", "get-url", "origin"], true);
    if (current.code !== 0) await this.#runner.run(["remote", "add", "origin", this.#remote]);
    else if (current.out.trim() !== this.#remote) {
      await this.#runner.run(["remote", "set-url", "origin", this.#remote]);
    }
    const refs = [request.branch, request.base].map((b) =>
      `+refs/heads/${b}:refs/remotes/origin/${b}`
    );
    const fetched = await this.#runner.run(
      ["fetch", "--quiet", "--no-tags", "origin", ...refs],
      true,
      true,
    );
    if (fetched.code !== 0) {
      throw new Error(`git fetch of ${request.branch} and ${request.base} failed`);
    }
    const head = request.head_sha;
    const known = await this.#runner.run(["cat-file", "-e", `${head}^{commit}`], true);
    if (known.code !== 0) {
      throw new Error(`The head ${head.slice(0, 7)} is not on ${request.branch} any more`);
    }
    await this.#runner.run(["checkout", "--quiet", "--force", "--detach", head]);
    const diff = await this.#runner.run([
      "diff",
      "--no-color",
      "--no-ext-diff",
      "--no-textconv",
      `refs/remotes/origin/${request.base}...${head}`,
    ]);
    return diff.out;
  }

  /** Before the session: its own repository shows the head (runner_git.ts, toSession). */
  async handToSession(): Promise<void> {
    await this.#runner.toSession();
  }

  /** Whatever the session left goes, unread: the next review starts from a fresh work tree. */
  async discard(): Promise<void> {
    await Deno.remove(this.dir, { recursive: true }).catch((error) => {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
    });
  }
}
