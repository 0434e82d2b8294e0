/**
 * `deno task team-review`: what the team's review (contract §21) adds to a chat task's
 * time-to-ready and cost, in one run on one machine. The real server (scripts/start.ts, the
 * program of `deno task start`) on a throw-away cluster with the seed (its demo user is connected
 * to the GitHub stand-in as demo-owner), the real Claude Code CLI against the model stand-in, real
 * git and the stand-in's demo repository. REVIEW_TASKS tasks (default 3) each way, interleaved,
 * one after the other, each in a project of its own (so every session of the project is that
 * task's): `review_rounds: 0` (no review) and `review_rounds: 2` (the default).
 *
 * For each task: the time from the chat message to the pull request being ready for people
 * (opened ready without review; with review, the moment the platform's `ready` GitHub action —
 * GraphQL `markPullRequestReadyForReview` — was done), and the cost and number of the project's
 * CLI sessions (the author's, the reviewer's reviews). Before printing, it checks each task made
 * one pull request with the rounds it should have: none and ready at once, or request_changes on
 * round 1 (what the model stand-in answers a first review) then approve on round 2, each review's
 * session among the sessions counted.
 */
import postgres from "postgres";
import { mintUserJwt } from "../local/auth/jwt.ts";
import { DEMO_ORGANIZATION_ID, DEMO_USER_ID, seed } from "../local/database/seed.ts";
import { startThrowawayDatabase } from "../local/database/throwaway_database.ts";
import { FAST_TEAM } from "../local/fleet/fast_team.ts";
import { spawnService } from "../local/host/spawn_service.ts";

const TASKS = Number(Deno.env.get("REVIEW_TASKS") ?? 3);
const say = (line: string) => console.error(`[team-review] ${line}`);

interface Measured {
  rounds: number;
  seconds: number;
  costUsd: number;
  /** Of which the reviewer's review sessions. */
  reviewCostUsd: number;
  /** CLI runs (session_started): a follow-up goes on with its session (`--resume`). */
  runs: number;
  /** public.cli_sessions rows: distinct sessions, a resumed one's cost adding up in its row. */
  sessions: number;
  reviewSessions: number;
}

const database = await startThrowawayDatabase("team_review_bench", say);
const vmRoot = await Deno.makeTempDir({ prefix: "team-review-vms-" });
const githubRoot = await Deno.makeTempDir({ prefix: "team-review-github-" });
const sql = postgres(database.url, { max: 2, onnotice: () => {} });
try {
  await seed(database.url);
  // The integration tests' fast team: the simulated VM boots in 0.3 s, the agent cycles every
  // 0.2 s (5 s by default), so what is left is mostly the sessions themselves.
  await using service = await spawnService(new URL("../scripts/start.ts", import.meta.url), {
    DATABASE_URL: database.url,
    LOCAL_VM_ROOT: vmRoot,
    LOCAL_GITHUB_ROOT: githubRoot,
    ...FAST_TEAM,
    // The bench asks vm-api for the project's status every 0.2 s, as no person does.
    VM_API_RATE_LIMIT: "100000",
  });
  const demo = /demo repository: (http:\/\/\S+)/.exec(service.output())?.[1];
  if (!demo) throw new Error(`no demo repository in the server's output:\n${service.output()}`);
  // start.ts says ready before the stand-in's installation of the demo repository reaches the
  // database; a project created before it would not get its push access verified (§18).
  await until(async () => {
    const [row] = await sql`
      select 1 from private.github_installation_repositories where repository = 'demo-owner/demo'`;
    return row;
  }, 30_000);
  const vmApi = async (body: Record<string, unknown>) => {
    const response = await fetch(`${service.origin}/functions/v1/vm-api`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${await mintUserJwt(DEMO_USER_ID)}`,
        "content-type": "application/json",
      },
      body: JSON.stringify(body),
    });
    const answer = await response.json();
    if (response.status !== 200) {
      throw new Error(`vm-api ${body.action}: ${response.status} ${JSON.stringify(answer)}`);
    }
    return answer.data as Record<string, unknown>;
  };
  const fail = async (error: Error): Promise<never> => {
    const log = await Deno.makeTempFile({ prefix: "team-review-", suffix: ".log" });
    await Deno.writeTextFile(log, service.output());
    throw new Error(`${error.message} (the server's output: ${log})`);
  };

  /** One chat task in a project of its own with `rounds` review rounds, measured. */
  const task = async (index: number, rounds: number): Promise<Measured> => {
    const { project_id: projectId } = await vmApi({
      action: "create",
      organization_id: DEMO_ORGANIZATION_ID,
      name: `team-review-${index}-rounds-${rounds}`,
      repository_url: demo,
    }) as { project_id: string };
    await vmApi({ action: "update", project_id: projectId, review_rounds: rounds });
    await until(async () => {
      const { project } = await vmApi({ action: "status", project_id: projectId }) as {
        project: { status: string; review_rounds: number; github: { installed: boolean } | null };
      };
      const [verified] = await sql`
        select 1 from private.project_github_verifications where project_id = ${projectId}`;
      return project.status === "active" && project.github?.installed && verified &&
          project.review_rounds === rounds || undefined;
    }, 60_000).catch(fail);
    // The message as a person sends it from Chat (the Data API's function, as that person).
    const messageId = await sql.begin(async (tx) => {
      await tx`select set_config('role', 'authenticated', true),
        set_config('request.jwt.claims', ${
        JSON.stringify({ sub: DEMO_USER_ID, role: "authenticated" })
      }, true)`;
      const [{ id }] = await tx<[{ id: string }]>`
        select public.send_agent_message(${projectId}, ${"Add a greeting to `src/hello.txt`"}) as id`;
      return id;
    });
    const ready = await until(async () => {
      const [row] = await sql<
        {
          id: string;
          agent: string;
          draft: boolean;
          review_state: string | null;
          review_rounds: number;
          seconds: number | null;
        }[]
      >`
        select p.id, p.agent, p.draft, p.review_state, p.review_rounds,
          extract(epoch from coalesce(
            (select a.done_at from private.github_actions a
             where a.pull_request_id = p.id and a.kind = 'ready' and a.last_error is null),
            case when ${rounds} = 0 then p.opened_at end) - m.created_at)::float8 as seconds
        from private.pull_requests p
        join public.agent_messages m on m.project_id = p.project_id and m.id::text = p.task_id
        where p.project_id = ${projectId} and m.id = ${messageId} and p.number is not null`;
      return row && !row.draft && row.seconds !== null ? row : undefined;
    }, 600_000).catch(fail);
    const reviews = await sql<{ round: number; verdict: string | null; session_id: string }[]>`
      select r.round, r.verdict, r.session_id from private.team_reviews r
      where r.pull_request_id = ${ready.id} order by r.round`;
    const [{ pulls }] = await sql<[{ pulls: number }]>`
      select count(*)::int as pulls from private.pull_requests where project_id = ${projectId}`;
    check(pulls === 1, `task ${index}: one pull request, not ${pulls}`);
    const expected = rounds === 0
      ? { state: null, reviews: [] }
      : { state: "approved", reviews: ["1:request_changes", "2:approve"] };
    const seen = reviews.map((r) => `${r.round}:${r.verdict}`);
    check(
      ready.review_state === expected.state && ready.review_rounds === expected.reviews.length &&
        JSON.stringify(seen) === JSON.stringify(expected.reviews),
      `task ${index} (review_rounds ${rounds}): review_state ${ready.review_state}, ` +
        `rounds ${ready.review_rounds}, reviews ${seen.join(" ")}`,
    );
    // Every session has ended and been reported (the reviews' among them), and no other starts.
    const sessions = await until(async () => {
      const rows = await sql<{ session_id: string; agent: string; cost: number; ended: boolean }[]>`
        select session_id, agent, cost_usd::float8 as cost, ended_at is not null as ended
        from public.cli_sessions where project_id = ${projectId}`;
      const ids = new Set(rows.map((r) => r.session_id));
      return rows.every((r) => r.ended) && reviews.every((r) => ids.has(r.session_id)) &&
          rows.some((r) => r.agent === ready.agent)
        ? rows
        : undefined;
    }, 60_000).catch(fail);
    const [{ runs }] = await sql<[{ runs: number }]>`
      select count(*)::int as runs from public.audit_events
      where project_id = ${projectId} and action = 'session_started'`;
    // At least: the opening run, and with review each round's run and the follow-up between.
    check(runs >= (rounds === 0 ? 1 : 4), `task ${index}: only ${runs} CLI runs`);
    await vmApi({ action: "stop", project_id: projectId });
    const costUsd = sessions.reduce((sum, r) => sum + r.cost, 0);
    check(costUsd > 0, `task ${index}: its sessions cost nothing`);
    const measured = {
      rounds,
      seconds: ready.seconds!,
      costUsd,
      reviewCostUsd: sessions.filter((r) => reviews.some((v) => v.session_id === r.session_id))
        .reduce((sum, r) => sum + r.cost, 0),
      runs,
      sessions: sessions.length,
      reviewSessions: reviews.length,
    };
    say(JSON.stringify(measured));
    return measured;
  };

  const results: Measured[] = [];
  for (let i = 0; i < TASKS; i++) {
    results.push(await task(2 * i, 0));
    results.push(await task(2 * i + 1, 2));
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const off = results.filter((r) => r.rounds === 0);
  const on = results.filter((r) => r.rounds === 2);
  const row = (name: string, rs: Measured[]) => [
    name,
    median(rs.map((r) => r.seconds)).toFixed(1),
    median(rs.map((r) => r.costUsd)).toFixed(4),
    median(rs.map((r) => r.reviewCostUsd)).toFixed(4),
    median(rs.map((r) => r.runs)),
    median(rs.map((r) => r.sessions)),
    median(rs.map((r) => r.reviewSessions)),
  ];
  const [a, b] = [row("review_rounds: 0", off), row("review_rounds: 2", on)];
  const ratio = (i: number) => (Number(b[i]) / Number(a[i])).toFixed(2);
  console.log(
    `| ${TASKS} chat tasks each way (p50) | to ready, s | cost, USD | reviews' cost, USD | CLI runs | sessions | reviews |`,
  );
  console.log("| --- | ---: | ---: | ---: | ---: | ---: | ---: |");
  console.log(`| ${a.join(" | ")} |`);
  console.log(`| ${b.join(" | ")} |`);
  console.log(
    `| ratio review / no review | ${ratio(1)}× | ${ratio(2)}× | | ${ratio(4)}× | ${ratio(5)}× | |`,
  );
} finally {
  await sql.end();
  await database.stop();
  await Deno.remove(vmRoot, { recursive: true }).catch(() => {});
  await Deno.remove(githubRoot, { recursive: true }).catch(() => {});
}

function check(ok: boolean, message: string): void {
  if (!ok) throw new Error(`not a valid measurement: ${message}`);
}

/** Polls `probe` every 200 ms until it answers a value, or fails after `ms`. */
async function until<T>(probe: () => Promise<T | undefined>, ms: number): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`not within ${ms / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
