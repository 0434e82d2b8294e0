/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
/// <reference lib="deno.ns" />
/**
 * The team's review and scorecards in the dashboard (contract §21) without a browser (linkedom):
 * Settings' team review section as members read it and as an admin's form saves it (vm-api
 * `update` with review_rounds and reviewers), and the Agents area's scorecards: each agent and
 * model's latest month, with the chart over months; the Pull requests area's team review badge.
 */
import assert from "node:assert/strict";
import { parseHTML } from "linkedom";

const dom = parseHTML("<!doctype html><html><body></body></html>");
Object.assign(globalThis, { document: dom.document, Node: dom.Node });

const { teamReviewSettings } = await import("../../dashboard/src/areas/settings/team_review.ts");
const { parseReviewers } = await import("../../dashboard/src/areas/settings.ts");
const { scorecardsView } = await import("../../dashboard/src/areas/agents.ts");
const { pullRequestsTable } = await import("../../dashboard/src/areas/pull_requests.ts");
const { memoryClient } = await import("../helpers/dashboard_memory.ts");
type AreaContext = import("../../dashboard/src/area.ts").AreaContext;
type Project = import("../../dashboard/src/data.ts").Project;
type Scorecard = import("../../dashboard/src/areas/agents/scorecards.ts").Scorecard;

const P = "11111111-1111-4111-8111-111111111111";
const O = "22222222-2222-4222-8222-222222222222";

function contextOf(client: AreaContext["client"]) {
  const said: string[] = [];
  const failed: unknown[] = [];
  const context: AreaContext = {
    client,
    userId: "u",
    membership: { organization_id: O, role: "owner", name: "Acme" },
    project: { id: P, organization_id: O } as Project,
    githubAccount: () => null,
    connectGitHub: () => {},
    say: (message) => said.push(message),
    fail: (error) => failed.push(error),
    changed: () => Promise.resolve(),
  };
  return { context, said, failed };
}

async function settled(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise((resolve) => setTimeout(resolve, 0));
}

Deno.test("Settings, team review: members read it; an admin's form saves rounds and reviewers", async () => {
  const { client, calls } = memoryClient(({ path, body }) => ({
    body: path === "/functions/v1/vm-api"
      ? { data: { project: { review_rounds: 2, reviewers: [], ...(body ?? {}), id: P } } }
      : [],
  }));
  const member = teamReviewSettings(contextOf(client).context, () => Promise.resolve());
  member.render(false);
  member.draw({ review_rounds: 0, reviewers: [] });
  assert.equal(member.section.querySelector("form"), null, "no form for members");
  assert.match(member.section.textContent ?? "", /Off: pull requests go straight to people/);

  const { context, said, failed } = contextOf(client);
  let refreshed = 0;
  const admin = teamReviewSettings(context, () => {
    refreshed++;
    return Promise.resolve();
  });
  admin.render(true);
  admin.draw({ review_rounds: 2, reviewers: ["octocat"] });
  assert.match(admin.section.textContent ?? "", /Up to 2 rounds by the team's reviewer/);
  assert.match(admin.section.textContent ?? "", /@octocat/);
  const rounds = admin.section.querySelector<HTMLInputElement>("#review-rounds")!;
  const reviewers = admin.section.querySelector<HTMLInputElement>("#reviewers")!;
  assert.equal(rounds.value, "2");
  assert.equal(reviewers.value, "octocat");
  rounds.value = "3";
  reviewers.value = "@octocat, hubot  mona";
  admin.section.querySelector("form")!.dispatchEvent(
    new dom.Event("submit", { cancelable: true }) as unknown as Event,
  );
  await settled();
  assert.deepEqual(failed, []);
  assert.deepEqual(calls.at(-1)?.body, {
    action: "update",
    project_id: P,
    review_rounds: 3,
    reviewers: ["octocat", "hubot", "mona"],
  });
  assert.equal(refreshed, 1);
  assert.match(said[0] ?? "", /up to 3 rounds/);
  assert.deepEqual(parseReviewers(" , "), []);
});

function card(fields: Partial<Scorecard>): Scorecard {
  return {
    project_id: P,
    agent: "builder",
    model: "claude-opus",
    period_start: "2026-11-01",
    pull_requests_opened: 4,
    pull_requests_merged: 2,
    pull_requests_closed_unmerged: 1,
    merge_rate: 0.6667,
    first_check_pass_rate: 0.5,
    mean_review_rounds: 1.5,
    follow_ups: 3,
    median_minutes_to_pull_request: 12.5,
    cost_usd: 4.2,
    cost_per_merged_pull_request_usd: 1.8,
    ...fields,
  };
}

Deno.test("Agents, scorecards: each agent and model's latest month, and merged by month", () => {
  const root = document.createElement("div");
  root.append(
    ...scorecardsView([
      card({}),
      card({ period_start: "2026-10-01", pull_requests_merged: 5 }),
      card({
        agent: "reviewer",
        model: "claude-sonnet",
        pull_requests_opened: 0,
        pull_requests_merged: 0,
        pull_requests_closed_unmerged: 0,
        merge_rate: null,
        first_check_pass_rate: null,
        mean_review_rounds: null,
        follow_ups: 0,
        median_minutes_to_pull_request: null,
        cost_usd: 0.9,
        cost_per_merged_pull_request_usd: null,
      }),
    ]) as Node[],
  );
  const rows = [...root.querySelectorAll("tbody tr")].map((row) =>
    [...row.querySelectorAll("td")].map((cell) => cell.textContent?.trim())
  );
  assert.deepEqual(rows[0], [
    "builder (claude-opus)",
    "2026-11",
    "4",
    "2",
    "1",
    "67 %",
    "50 %",
    "1.5",
    "3",
    "12.5 min",
    "$4.20",
    "$1.80",
  ]);
  assert.deepEqual(rows[1]?.slice(0, 6), [
    "reviewer (claude-sonnet)",
    "2026-11",
    "0",
    "0",
    "0",
    "—",
  ]);
  assert.equal(rows.length, 2, "one row per agent and model: its latest month");
  const chart = root.querySelector("figure svg");
  assert.equal(
    chart?.getAttribute("aria-label"),
    "Pull requests merged, by month: 2026-10 5, 2026-11 2",
  );
  assert.match(
    (scorecardsView([])[0] as Element).textContent ?? "",
    /nothing to score/,
  );
});

Deno.test("Pull requests: the team's review beside the state", () => {
  const base = {
    project_id: P,
    url: "https://github.com/acme/app/pull/1",
    title: "Count words",
    branch: "agents/builder/count-1a2b3c",
    base: "main",
    agent: "builder",
    task_id: "t1",
    state: "open",
    head_sha: null,
    checks: null,
    sessions: 1,
    cost_usd: 0.1,
    opened_at: "2026-11-25T09:00:00.000Z",
    updated_at: "2026-11-25T09:00:00.000Z",
  };
  const table = pullRequestsTable([
    { ...base, number: 1, draft: true, review_state: "pending", review_rounds: 1 },
    { ...base, number: 2, draft: false, review_state: "approved", review_rounds: 2 },
    { ...base, number: 3, draft: false, review_state: null, review_rounds: 0 },
  ]);
  const states = [...table.querySelectorAll("tbody tr")].map((row) =>
    row.querySelectorAll("td")[3]?.textContent?.trim()
  );
  assert.deepEqual(states, ["open", "open team approved", "open draft in team review"]);
  assert.equal(
    table.querySelector(".badge-review_approved")?.getAttribute("title"),
    "Team review rounds: 2",
  );
});
