/**
 * The repository's environment through `deno task start` (contract §20), with the real Claude
 * Code CLI against the model stand-in and a real repository (as root here, so setup, check and
 * sessions run as the agent's own user): setup runs once, as the session user, before the first
 * session, and not again for a second task; a `depends-on` file's change runs it once more; a
 * failing setup holds the task (the agent in `error`) until a fix, or until `retry_setup`; the
 * check runs after a session with commits and not after one without; a failing check resumes the
 * same session with its log (the stand-in fixes what the log names) and then pushes; a check that
 * keeps failing past `ci_fix_rounds` is pushed anyway, marked failing; locally the project's
 * system packages are checked with dpkg, a missing one fails setup, and nothing is installed. In
 * `pull_request` mode (the GitHub stand-in's demo repository) a failing check is on the pull
 * request's head as the check run `agents / check`, `failure`, with its log (github_tour_test has
 * the passing one).
 */
import assert from "node:assert/strict";
import { dirname } from "node:path";
import { createTestDatabase } from "../helpers/database.ts";
import { createOrganization, createUser } from "../helpers/fixtures.ts";
import { connectThroughOAuth } from "../helpers/github_oauth.ts";
import { FAST_TEAM, startServer } from "../helpers/server.ts";
import { git, teamChat } from "../helpers/team_chat.ts";
import { eventually, vmApi } from "../helpers/vm_api.ts";

const SESSION_MS = 90_000;

Deno.test("the repository's environment: setup and check through deno task start", async (t) => {
  await using db = await createTestDatabase();
  await using server = await startServer(db.url, FAST_TEAM);
  const { projectId, userId, say, asMember } = await teamChat(db.sql, server, "environment");
  const work = await Deno.makeTempDir({ prefix: "environment-work-" });
  // Outside the clone: what holds setup without changing its hash (then Retry setup releases it).
  const hold = `${work}-hold`;
  const remote = await eventually(async () => {
    const [p] = await db.sql`select repository_url from public.projects where id = ${projectId}`;
    return p?.repository_url ?? undefined;
  });
  const repo = `${work}/repo`;
  await git(work, "clone", "-q", remote, repo);
  /** A person's commit on main: files written (null: removed), pushed. */
  const push = async (files: Record<string, string | null>) => {
    await git(repo, "pull", "-q", "--rebase", "origin", "main");
    for (const [name, text] of Object.entries(files)) {
      if (text === null) await Deno.remove(`${repo}/${name}`);
      else {
        await Deno.mkdir(dirname(`${repo}/${name}`), { recursive: true });
        await Deno.writeTextFile(`${repo}/${name}`, text);
      }
    }
    await git(repo, "add", "-A");
    await git(repo, "-c", "user.name=person", "-c", "user.email=p@x", "commit", "-qm", "change");
    await git(repo, "push", "-q", "origin", "HEAD:main");
  };
  const events = async (action: string) =>
    (await db.sql<{ details: Record<string, unknown>; created_at: Date }[]>`
      select details, created_at from public.audit_events
      where project_id = ${projectId} and action = ${action} and agent = 'lead'
      order by created_at, id`).map((e) => e);
  const count = async (action: string) => (await events(action)).length;
  const waitFor = (action: string, n: number) =>
    eventually(async () => {
      const found = await events(action);
      return found.length >= n ? found : undefined;
    }, { timeoutMs: SESSION_MS });
  const sessions = async () =>
    (await db.sql<{ session_id: string }[]>`select session_id from public.cli_sessions
      where project_id = ${projectId} and agent = 'lead' order by started_at`).map((s) =>
      s.session_id
    );
  /** The VM took the manifest of the project's revision (update_manifest, contract §3). */
  const manifestTaken = () =>
    eventually(async () => {
      const [row] = await db.sql`select count(*)::int as n from public.vm_commands
        where project_id = ${projectId} and type = 'update_manifest' and status = 'succeeded'
          and (payload->>'revision')::int = (select manifest_revision from public.projects
            where id = ${projectId})`;
      return row!.n > 0 || undefined;
    }, { timeoutMs: 30_000 });
  const waitForSessions = (n: number) =>
    eventually(async () => (await sessions()).length >= n || undefined, {
      timeoutMs: SESSION_MS,
    });

  await push({
    ".agents/setup.sh": [
      "# agents:depends-on deps.txt",
      'echo "setup as $(id -un)"',
      'echo "deps: $(cat deps.txt 2>/dev/null || echo none)"',
      'if grep -q refuse deps.txt 2>/dev/null; then echo "setup refuses: deps.txt says so"; exit 3; fi',
      `if [ -e ${hold} ]; then echo "setup held by ${hold}"; exit 4; fi`,
      "echo prepared > .cache-prepared",
      "",
    ].join("\n"),
    ".gitignore": ".cache-prepared\n",
    ".agents/check.sh": [
      'if grep -q always-fails NOTES.md; then echo "always failing"; exit 1; fi',
      "if grep -q needs-fix NOTES.md && [ ! -f FIXED.md ]; then",
      "  echo 'the check wants `FIXED.md`'; exit 1",
      "fi",
      'echo "check passed as $(id -un)"',
      "",
    ].join("\n"),
  });

  await t.step("setup runs once, as the session user, before the first session", async () => {
    await say("Write the first note");
    await waitForSessions(1);
    const [setup] = await waitFor("setup_completed", 1);
    const tail = String(setup!.details.log_tail);
    const user = /setup as (\S+)/.exec(tail)?.[1];
    assert.ok(user && user !== "root", tail);
    assert.match(user, /lead$/);
    assert.match(String(setup!.details.hash), /^[0-9a-f]{64}$/);
    const [started] = await events("session_started");
    assert.ok(setup!.created_at <= started!.created_at, "setup before the session");
    const steps = await db.sql<{ session_id: string; summary: string }[]>`
      select session_id, summary from public.session_steps
      where project_id = ${projectId} and kind = 'setup' order by seq`;
    assert.equal(steps[0]!.session_id, `setup:lead:${String(setup!.details.hash).slice(0, 12)}`);
    assert.ok(steps.some((s) => s.summary === "Setup completed"), JSON.stringify(steps));
    // The session left a commit: the check ran, as the same user, before the push.
    const [check] = await waitFor("check_passed", 1);
    assert.match(String(check!.details.log_tail), new RegExp(`check passed as ${user}`));
    assert.equal(check!.details.exit_status, "0");
  });

  await t.step("a second task runs no setup; a session without commits no check", async () => {
    await say("Run `true`");
    await waitForSessions(2);
    await waitFor("session_completed", 2);
    await new Promise((r) => setTimeout(r, 1_000));
    assert.equal(await count("setup_started"), 1);
    assert.equal(await count("check_passed") + await count("check_failed"), 1);
  });

  await t.step("a change of a depends-on file runs setup once more", async () => {
    await push({ "deps.txt": "v2\n" });
    await say("Write the third note");
    await waitForSessions(3);
    const done = await waitFor("setup_completed", 2);
    assert.match(String(done[1]!.details.log_tail), /deps: v2/);
    assert.notEqual(done[1]!.details.hash, done[0]!.details.hash);
    assert.equal(await count("setup_started"), 2);
  });

  await t.step(
    "a failing setup holds the task, the agent in error; a fix releases it",
    async () => {
      await push({ "deps.txt": "refuse\n" });
      await say("Write the fourth note");
      const [failed] = await waitFor("setup_failed", 1);
      assert.equal(failed!.details.exit_status, "3");
      assert.match(String(failed!.details.log_tail), /setup refuses/);
      const agent = await eventually(async () => {
        const [row] = await db.sql<{ status: string; error: string | null }[]>`
        select status, error from public.project_agents
        where project_id = ${projectId} and name = 'lead'`;
        return row?.status === "error" ? row : undefined;
      });
      assert.match(agent.error!, /Setup failed \(exit 3\)/);
      // Held: cycles go by, the hash is the same, setup is not run again and no session starts.
      await new Promise((r) => setTimeout(r, 2_000));
      assert.equal(await count("setup_started"), 3);
      assert.equal((await sessions()).length, 3);
      await push({ "deps.txt": "v2, fixed\n" });
      await waitForSessions(4);
      assert.equal(await count("setup_completed"), 3);
    },
  );

  await t.step("retry_setup runs a failed setup again at once", async () => {
    await Deno.writeTextFile(hold, "held\n");
    await Deno.chmod(hold, 0o644);
    await push({ "deps.txt": "v3\n" });
    await say("Write the fifth note");
    await waitFor("setup_failed", 2);
    await Deno.remove(hold);
    await new Promise((r) => setTimeout(r, 1_500));
    assert.equal(await count("setup_failed"), 2, "the same hash is not run again by itself");
    assert.equal((await sessions()).length, 4);
    await asMember((tx) =>
      tx`select public.queue_vm_command(${projectId}, 'retry_setup', '{"agents":["lead"]}')`
    );
    await waitForSessions(5);
    assert.equal(await count("setup_completed"), 4);
  });

  await t.step("locally, system packages are checked with dpkg, never installed", async () => {
    const missing = "vm-service-no-such-package";
    const packages = async (system_packages: string[]) => {
      const updated = await vmApi(server).call(userId, {
        action: "update",
        project_id: projectId,
        system_packages,
      });
      assert.equal(updated.status, 200, JSON.stringify(updated.body));
      await manifestTaken();
    };
    await packages(["bash", missing]);
    await say("Write the sixth note");
    const failed = await waitFor("setup_failed", 3);
    assert.match(
      String(failed[2]!.details.log_tail),
      new RegExp(`not installed: ${missing}$`, "m"),
    );
    const dpkg = await new Deno.Command("dpkg-query", { args: ["-W", missing], stderr: "null" })
      .output();
    assert.equal(dpkg.success, false, "nothing was installed on this machine");
    assert.equal((await sessions()).length, 5, "the task waits");
    await packages(["bash"]);
    await waitForSessions(6);
    assert.equal(await count("setup_completed"), 5);
  });

  await t.step("a failing check resumes the same session with its log, then pushes", async () => {
    const passed = await count("check_passed");
    await say("Write needs-fix in the notes");
    await waitForSessions(7);
    const session = (await sessions())[6]!;
    const [failed] = await waitFor("check_failed", 1);
    assert.match(String(failed!.details.log_tail), /the check wants `FIXED.md`/);
    assert.equal(failed!.details.pushed, false);
    await waitFor("check_passed", passed + 1);
    // The stand-in read the log in the same conversation: it wrote the file the log named.
    const fixed = await eventually(
      async () => (await git(remote, "show", "main:FIXED.md").catch(() => "")) || undefined,
    );
    assert.match(fixed, /^lead: /m);
    const results = await db.sql`select seq from public.session_steps
      where project_id = ${projectId} and session_id = ${session} and kind = 'result'`;
    assert.equal(results.length, 2, "one session, resumed once");
  });

  await t.step("a check failing past ci_fix_rounds is pushed, marked failing", async () => {
    const updated = await vmApi(server).call(userId, {
      action: "update",
      project_id: projectId,
      ci_fix_rounds: 1,
      // The project's check_command wins over .agents/check.sh (the same script here, with a
      // word of its own); changing it moves the manifest's revision, so the VM reads both now.
      check_command: "echo by check_command; bash .agents/check.sh",
    });
    assert.equal(updated.status, 200, JSON.stringify(updated.body));
    await manifestTaken();
    await say("Write always-fails in the notes");
    const failed = await eventually(async () => {
      const all = await events("check_failed");
      return all.some((e) => e.details.pushed === true) ? all : undefined;
    }, { timeoutMs: SESSION_MS });
    // One round sent back to the session (ci_fix_rounds 1), then pushed.
    assert.deepEqual(failed.slice(1).map((e) => e.details.pushed), [false, true]);
    const body = await eventually(async () => {
      const text = await git(remote, "log", "-1", "--format=%B", "main");
      return /always-fails/.test(await git(remote, "show", "main:NOTES.md")) ? text : undefined;
    });
    assert.match(body, /^Agents-Check: failed$/m);
    assert.match(String(failed.at(-1)!.details.log_tail), /by check_command\nalways failing/);
  });

  await Deno.remove(work, { recursive: true });
});

Deno.test("pull_request mode: a failing check is agents / check, failure, on the head", async () => {
  await using db = await createTestDatabase();
  await using server = await startServer(db.url, FAST_TEAM);
  const demo = /demo repository: (http:\/\/\S+)/.exec(server.output())?.[1];
  assert.ok(demo);
  const api = vmApi(server);
  const user = await createUser(db.sql);
  const org = await createOrganization(db.sql, [user]);
  const connected = await connectThroughOAuth(server, user, "demo-owner");
  await connected.response.body?.cancel();
  const created = await api.call(user, {
    action: "create",
    organization_id: org,
    name: "checked",
    repository_url: demo,
  });
  assert.equal(created.status, 200, JSON.stringify(created.body));
  const projectId = (created.body.data as { project_id: string }).project_id;
  await eventually(async () => {
    const [p] = await db.sql`select status from public.projects where id = ${projectId}`;
    return p?.status === "active" || undefined;
  }, { timeoutMs: 30_000 });
  // The project's own check, failing; no round sent back: pushed at once, marked failing.
  const updated = await api.call(user, {
    action: "update",
    project_id: projectId,
    check_command: "echo the greeting is not proven; exit 7",
    ci_fix_rounds: 0,
  });
  assert.equal(updated.status, 200, JSON.stringify(updated.body));
  await eventually(async () => {
    const [row] = await db.sql`select count(*)::int as n from public.vm_commands
      where project_id = ${projectId} and type = 'update_manifest' and status = 'succeeded'
        and (payload->>'revision')::int = (select manifest_revision from public.projects
          where id = ${projectId})`;
    return row!.n > 0 || undefined;
  }, { timeoutMs: 30_000 });
  await db.sql.begin(async (tx) => {
    await tx`select set_config('role', 'authenticated', true),
      set_config('request.jwt.claims', ${
      JSON.stringify({ sub: user, role: "authenticated" })
    }, true)`;
    await tx`select public.send_agent_message(${projectId}, ${"Add a greeting to `src/hello.txt`"})`;
  });
  const pr = await eventually(async () => {
    const [row] = await db.sql<{ url: string; head_sha: string | null }[]>`
      select url, head_sha from public.pull_requests where project_id = ${projectId}`;
    return row;
  }, { timeoutMs: SESSION_MS });
  const page = await eventually(async () => {
    const html = await (await fetch(pr.url)).text();
    return /<td>agents \/ check<\/td><td>failure<\/td>/.test(html) ? html : undefined;
  }, { timeoutMs: 30_000 });
  assert.match(page, /the greeting is not proven/);
  const [failed] = await db.sql`select details from public.audit_events
    where project_id = ${projectId} and action = 'check_failed' and agent = 'lead'`;
  assert.equal(failed?.details.pushed, true);
  assert.equal(failed?.details.exit_status, "7");
});
