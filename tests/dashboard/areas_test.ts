/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
/// <reference lib="deno.ns" />
/**
 * The dashboard's areas as functions from their rows to DOM, rendered without a browser (linkedom
 * gives the DOM the areas build with).
 */
import assert from "node:assert/strict";
import { parseHTML } from "linkedom";

const dom = parseHTML("<!doctype html><html><body></body></html>");
Object.assign(globalThis, { document: dom.document, Node: dom.Node });

const { agentsView } = await import("../../dashboard/src/areas/agents.ts");
const { chatThread } = await import("../../dashboard/src/areas/chat.ts");
const { activityTable } = await import("../../dashboard/src/areas/overview.ts");
const { logTable } = await import("../../dashboard/src/areas/logs.ts");

const P = "11111111-1111-4111-8111-111111111111";
const AT = "2026-11-25T09:00:00.000Z";
const cells = (table: HTMLElement) =>
  [...table.querySelectorAll("tbody tr")].map((row) =>
    [...row.querySelectorAll("td")].map((cell) => cell.textContent?.trim())
  );

Deno.test("Agents: the team by name with status, task and error; the sessions with cost", () => {
  const view = agentsView({
    status: [
      {
        project_id: P,
        name: "lead",
        status: "active",
        current_task: "Add a greeting",
        last_activity_at: AT,
        error: null,
        last_reported_at: AT,
        silent: false,
      },
      {
        project_id: P,
        name: "builder",
        status: "error",
        current_task: null,
        last_activity_at: AT,
        error: "CLI exited 1",
        last_reported_at: AT,
        silent: true,
      },
    ],
    watchdog: [{
      project_id: P,
      name: "p",
      status: "active",
      last_heard_at: AT,
      message: "No agent activity for more than 30 minutes: check the Agents tab",
    }],
    history: [{
      project_id: P,
      session_id: "s1",
      agent: "lead",
      model: "claude-sonnet-4-5",
      started_at: AT,
      ended_at: AT,
      duration_seconds: 12.4,
      input_tokens: 91500,
      output_tokens: 120,
      cost_usd: 0.2761,
      exit_status: "0",
    }],
  } as never);
  const agents = cells(view.agents);
  assert.deepEqual(agents.map((r) => r[0]), ["builder", "lead"], "sorted by name");
  assert.match(agents[0]![1]!, /error.*silent/);
  assert.equal(agents[0]![4], "CLI exited 1");
  assert.equal(agents[1]![2], "Add a greeting");
  assert.equal(agents[0]![2], "—");
  const [session] = cells(view.sessions);
  assert.deepEqual(
    [session![0], session![3], session![4], session![6]],
    ["lead", "12 s", "91500 / 120", "0"],
  );
  assert.equal(session![5], "$0.28");
  assert.equal(view.alerts.length, 1);
});

Deno.test("Chat: oldest first, the agents' messages under their names, the member's as You", () => {
  const items = chatThread([
    {
      id: "1",
      project_id: P,
      direction: "to_agents",
      agent: null,
      user_id: "u",
      content: "Add a greeting",
      created_at: AT,
    },
    {
      id: "2",
      project_id: P,
      direction: "from_agent",
      agent: "lead",
      user_id: null,
      content: "Done.",
      created_at: AT,
    },
  ] as never);
  assert.deepEqual(items.map((li) => li.className), ["from-user", "from-agent"]);
  assert.equal(items[0]!.querySelector(".author")?.textContent, "You");
  assert.equal(items[1]!.querySelector(".author")?.textContent, "lead");
  assert.equal(items[1]!.querySelector("p")?.textContent, "Done.");
  assert.equal(chatThread([])[0]!.textContent, "No message yet.");
});

Deno.test("Overview and Logs tell a pushed commit as a person reads it", () => {
  const details = {
    commit: "fc418e561d2b36b393c079aed6d84b18fbae1098",
    subject: "Add a greeting",
    branch: "main",
    lines_added: 1,
    lines_removed: 0,
  };
  const overview = cells(activityTable([
    {
      project_id: P,
      source: "agent",
      action: "commit_pushed",
      severity: "info",
      agent: "lead",
      details,
      occurred_at: AT,
    },
  ] as never));
  assert.equal(overview[0]![1], 'pushed fc418e5 "Add a greeting" to main (+1 −0)');
  assert.equal(overview[0]![2], "lead");
  const logs = logTable([
    {
      project_id: P,
      source: "audit",
      severity: "info",
      summary: "lead: commit_pushed",
      details,
      occurred_at: AT,
    },
    {
      project_id: P,
      source: "request",
      severity: "info",
      summary: "/health 200",
      details: {},
      occurred_at: AT,
    },
  ] as never, "");
  assert.deepEqual(cells(logs).map((r) => r[3]), [
    'lead: pushed fc418e5 "Add a greeting" to main (+1 −0)',
    "/health 200",
  ]);
  assert.equal(logs.querySelector("caption")?.textContent, "The latest 100 entries");
  assert.equal(logTable([], "error").textContent, "Nothing yet.");
});
