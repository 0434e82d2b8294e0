/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
/// <reference lib="deno.ns" />
/**
 * Watching a session (contract §17, issue 39) without a browser (linkedom): a step as a person reads
 * it, the steps panel's paging and its incremental append, the Agents area reading only the new
 * steps when `session_steps` telemetry comes, Live telling its listeners which tables' telemetry
 * brought a tick, and the typed client's queries as the Data API gets them.
 */
import assert from "node:assert/strict";
import { parseHTML } from "linkedom";

const dom = parseHTML("<!doctype html><html><body></body></html>");
Object.assign(globalThis, { document: dom.document, Node: dom.Node });

const { agentsView, mountAgents, stepItem, stepsPanel, STEP_PAGE } = await import(
  "../../dashboard/src/areas/agents.ts"
);
const { createDashboardClient, latestSessionOf, sessionSteps } = await import(
  "../../supabase/client/dashboard.ts"
);
const { Live } = await import("../../dashboard/src/live.ts");
type SessionStep = import("../../supabase/client/dashboard.ts").SessionStep;
type StepRange = import("../../supabase/client/dashboard.ts").StepRange;
type DashboardClient = import("../../supabase/client/dashboard.ts").DashboardClient;

const P = "11111111-1111-4111-8111-111111111111";
const AT = "2026-11-25T09:00:00.000Z";

function step(seq: number, fields: Partial<SessionStep> = {}): SessionStep {
  return {
    project_id: P,
    session_id: "s1",
    seq,
    agent: "lead",
    kind: "text",
    tool: null,
    summary: `Step ${seq}`,
    detail: null,
    truncated: false,
    at: AT,
    created_at: AT,
    ...fields,
  };
}

/** A session's steps in memory, read as sessionSteps reads them; every range asked is kept. */
function source(rows: SessionStep[]) {
  const asked: StepRange[] = [];
  return {
    rows,
    asked,
    load(range: StepRange): Promise<SessionStep[]> {
      asked.push(range);
      const sorted = [...rows].sort((a, b) => a.seq! - b.seq!);
      if (range.afterSeq !== undefined) {
        return Promise.resolve(
          sorted.filter((r) => r.seq! > range.afterSeq!).slice(0, range.limit),
        );
      }
      const before = sorted.filter((r) =>
        range.beforeSeq === undefined || r.seq! < range.beforeSeq
      );
      return Promise.resolve(before.slice(Math.max(0, before.length - range.limit)));
    },
  };
}

function panelOf(rows: SessionStep[], live = true, pageSize?: number) {
  const steps = source(rows);
  const failures: unknown[] = [];
  const panel = stepsPanel({
    title: "lead's current session",
    live,
    load: steps.load,
    close() {},
    fail: (error: unknown) => failures.push(error),
    ...(pageSize ? { pageSize } : {}),
  });
  return { panel, steps, failures };
}

const seqs = (element: HTMLElement) =>
  [...element.querySelectorAll("li.step")].map((li) => Number(li.getAttribute("data-seq")));
const earlierButton = (element: HTMLElement) =>
  [...element.querySelectorAll("button")].find((b) => b.textContent === "Show earlier steps")!;

Deno.test("A step: its kind in words, the tool, the summary, the detail behind a disclosure", () => {
  const said = stepItem(step(0, { summary: "Looking at the build" }));
  assert.match(said.textContent!, /Text/);
  assert.match(said.textContent!, /Looking at the build/);
  assert.equal(said.querySelector("details"), null, "no detail, nothing to expand");

  const call = stepItem(step(1, {
    kind: "tool_use",
    tool: "Bash",
    summary: "deno task test",
    detail: "deno task test --filter greeting",
  }));
  assert.match(call.querySelector(".step-kind")!.textContent!, /Tool call/);
  assert.equal(call.querySelector(".step-kind [aria-hidden]")?.textContent, "🔧");
  assert.equal(call.querySelector("code")?.textContent, "Bash");
  assert.equal(call.querySelector("details summary")?.textContent, "deno task test");
  assert.equal(call.querySelector("details pre")?.textContent, "deno task test --filter greeting");
  assert.doesNotMatch(call.textContent!, /\(cut\)/);

  const cut = stepItem(step(2, {
    kind: "tool_result",
    tool: "Bash",
    summary: "ok | 41 passed",
    detail: "x".repeat(4096),
    truncated: true,
  }));
  assert.match(cut.textContent!, /Tool result/);
  assert.equal(cut.querySelector("details .hint")?.textContent, "(cut)");

  for (const [kind, label] of [["approval", "Approval"], ["result", "Result"]] as const) {
    assert.match(
      stepItem(step(3, { kind })).querySelector(".step-kind")!.textContent!,
      new RegExp(label!),
    );
  }
  assert.equal(stepItem(step(4)).querySelector("time")?.getAttribute("datetime"), AT);
});

Deno.test("The panel pages a 2,000-step session: the latest 200, then earlier ones on demand", async () => {
  const { panel, steps, failures } = panelOf(Array.from({ length: 2000 }, (_, i) => step(i)));
  await panel.newer();
  assert.deepEqual(steps.asked, [{ limit: STEP_PAGE }], "the latest page, newest read first");
  assert.equal(seqs(panel.element).length, 200);
  assert.deepEqual([seqs(panel.element)[0], seqs(panel.element).at(-1)], [1800, 1999]);
  assert.equal(earlierButton(panel.element).hasAttribute("hidden"), false);
  assert.match(panel.element.querySelector("[role=status]")!.textContent!, /^200 steps shown/);

  const shown = [...panel.element.querySelectorAll("li.step")];
  earlierButton(panel.element).click();
  await new Promise((resolve) => setTimeout(resolve, 0)); // the click's read, from memory
  assert.deepEqual(steps.asked[1], { beforeSeq: 1800, limit: STEP_PAGE });
  assert.equal(seqs(panel.element).length, 400);
  assert.deepEqual([seqs(panel.element)[0], seqs(panel.element)[200]], [1600, 1800]);
  assert.ok(
    shown.every((li, i) => panel.element.querySelectorAll("li.step")[200 + i] === li),
    "the steps shown stay the same nodes",
  );
  while (!earlierButton(panel.element).hasAttribute("hidden")) await panel.earlier();
  assert.deepEqual(seqs(panel.element), Array.from({ length: 2000 }, (_, i) => i));
  assert.deepEqual(failures, []);
});

Deno.test("New steps are read after the last seq shown and appended, the shown ones kept", async () => {
  const { panel, steps } = panelOf([0, 1, 2, 3, 4].map((seq) => step(seq)));
  await panel.newer();
  assert.equal(earlierButton(panel.element).hasAttribute("hidden"), true, "all of it on one page");
  const before = [...panel.element.querySelectorAll("li.step")];

  steps.rows.push(step(5, { kind: "tool_use", tool: "Edit", summary: "src/greeting.ts" }), step(6));
  await panel.newer();
  assert.deepEqual(steps.asked.at(-1), { afterSeq: 4, limit: STEP_PAGE });
  const after = [...panel.element.querySelectorAll("li.step")];
  assert.deepEqual(seqs(panel.element), [0, 1, 2, 3, 4, 5, 6]);
  assert.ok(before.every((li, i) => after[i] === li), "no item is drawn again");

  // A burst longer than a page (a rejoin after a while away): read on to the end, page by page.
  steps.rows.push(...Array.from({ length: 450 }, (_, i) => step(7 + i)));
  await panel.newer();
  assert.deepEqual(steps.asked.slice(-3).map((r) => r.afterSeq), [6, 206, 406]);
  assert.equal(seqs(panel.element).length, 457);
  assert.equal(panel.element.querySelectorAll("li.step")[0], before[0]);

  // A read that overlaps what is shown adds nothing twice.
  await panel.newer();
  assert.equal(seqs(panel.element).length, 457);
});

Deno.test("An empty session says so, live or kept no more", async () => {
  const live = panelOf([]);
  await live.panel.newer();
  assert.match(live.panel.element.textContent!, /No step yet/);
  const past = panelOf([], false);
  await past.panel.newer();
  assert.match(past.panel.element.textContent!, /No step of this session is kept/);
});

Deno.test("Rendering 2,000 steps with linkedom (the figure is printed, not asserted)", async () => {
  const rows = Array.from({ length: 2000 }, (_, i) =>
    step(i, {
      kind: ["text", "tool_use", "tool_result", "approval", "result"][i % 5]!,
      tool: i % 5 === 1 || i % 5 === 2 ? "Bash" : null,
      detail: i % 2 ? "line one\nline two\n".repeat(20) : null,
      truncated: i % 10 === 1,
    }));
  const once = panelOf(rows, true, 2000);
  let started = performance.now();
  await once.panel.newer();
  const whole = performance.now() - started;
  assert.equal(seqs(once.panel.element).length, 2000);

  const paged = panelOf(rows);
  started = performance.now();
  await paged.panel.newer();
  const firstPage = performance.now() - started;
  while (!earlierButton(paged.panel.element).hasAttribute("hidden")) await paged.panel.earlier();
  const allPages = performance.now() - started;
  assert.equal(seqs(paged.panel.element).length, 2000);

  const live = panelOf(rows);
  await live.panel.newer();
  live.steps.rows.push(step(2000));
  started = performance.now();
  await live.panel.newer();
  const oneNew = performance.now() - started;
  console.log(
    `2,000 steps (linkedom): at once ${whole.toFixed(1)} ms; the first page of 200 ` +
      `${firstPage.toFixed(1)} ms; all 10 pages ${allPages.toFixed(1)} ms; one new step appended ` +
      `to 200 ${oneNew.toFixed(2)} ms`,
  );
});

Deno.test("Agents: Watch on each running agent, Steps on each past session", () => {
  const watched: string[] = [];
  const interrupted: string[] = [];
  const read: string[] = [];
  const view = agentsView({
    status: [
      { project_id: P, name: "lead", status: "active", silent: false },
      { project_id: P, name: "builder", status: "idle", silent: false },
    ],
    watchdog: [],
    history: [
      { project_id: P, session_id: "s1", agent: "lead", started_at: AT, ended_at: AT },
      { project_id: P, session_id: "s0", agent: "builder", started_at: AT, ended_at: AT },
    ],
  } as never, {
    watch: (agent: string) => watched.push(agent),
    interrupt: (agent: string) => interrupted.push(agent),
    steps: (session: { session_id: string | null }) => read.push(session.session_id!),
  });
  const buttons = [...view.agents.querySelectorAll("button")];
  assert.deepEqual(buttons.map((b) => b.getAttribute("aria-label")), [
    "Watch lead's session",
    "Interrupt lead",
  ]);
  buttons[0]!.click();
  assert.deepEqual(watched, ["lead"]);
  // Interrupt, beside each running agent (contract §17).
  buttons[1]!.click();
  assert.deepEqual(interrupted, ["lead"]);
  const stepsButtons = [...view.sessions.querySelectorAll("button")];
  assert.deepEqual(stepsButtons.map((b) => b.textContent), ["Steps", "Steps"]);
  assert.match(
    stepsButtons[1]!.getAttribute("aria-label")!,
    /^Steps of builder's session started /,
  );
  stepsButtons[1]!.click();
  assert.deepEqual(read, ["s0"]);
});

/** A typed client whose Data API answers from `answer` by path; every request URL is kept. */
function fakeClient(answer: (url: URL) => unknown) {
  const urls: URL[] = [];
  const client = createDashboardClient("http://api.test", "anon", {
    auth: { persistSession: false, autoRefreshToken: false, detectSessionInUrl: false },
    global: {
      fetch: (input: string | URL | Request) => {
        const url = new URL(input instanceof Request ? input.url : String(input));
        urls.push(url);
        return Promise.resolve(
          new Response(JSON.stringify(answer(url)), {
            headers: { "content-type": "application/json" },
          }),
        );
      },
    },
  });
  return { client, urls };
}

const query = (url: URL) => decodeURIComponent(url.search);

Deno.test("sessionSteps and latestSessionOf: the Data API queries they make", async () => {
  const { client, urls } = fakeClient(() => [step(2), step(1)]);
  const latest = await sessionSteps(client, P, "s1", { limit: 200 });
  assert.deepEqual(latest.map((s) => s.seq), [1, 2], "read newest first, answered in seq order");
  await sessionSteps(client, P, "s1", { beforeSeq: 1800, limit: 200 });
  await sessionSteps(client, P, "s1", { afterSeq: 41, limit: 200 });
  const since = new Date(AT);
  assert.equal(await latestSessionOf(client, P, "lead", since), "s1");
  assert.deepEqual(urls.map((u) => u.pathname), Array(4).fill("/rest/v1/session_steps"));
  assert.deepEqual(urls.map(query), [
    `?select=*&project_id=eq.${P}&session_id=eq.s1&order=seq.desc&limit=200`,
    `?select=*&project_id=eq.${P}&session_id=eq.s1&seq=lt.1800&order=seq.desc&limit=200`,
    `?select=*&project_id=eq.${P}&session_id=eq.s1&seq=gt.41&order=seq.asc&limit=200`,
    `?select=session_id&project_id=eq.${P}&agent=eq.lead&at=gte.${AT}&order=at.desc&limit=1`,
  ]);
});

Deno.test("Agents area: Watch reads the session's latest steps; steps telemetry reads only newer ones", async () => {
  const rows = [step(0), step(1, { kind: "tool_use", tool: "Bash", summary: "ls" })];
  const { client, urls } = fakeClient((url) => {
    const path = url.pathname.replace("/rest/v1/", "");
    if (path === "agent_status") return [{ project_id: P, name: "lead", status: "active" }];
    if (path !== "session_steps") return [];
    if (url.searchParams.get("select") === "session_id") return [{ session_id: "s1" }];
    const after = url.searchParams.get("seq")?.match(/^gt\.(\d+)$/)?.[1];
    return after === undefined ? [...rows].reverse() : rows.filter((r) => r.seq! > Number(after));
  });
  const root = document.createElement("div");
  const failures: unknown[] = [];
  const area = mountAgents(root, {
    client,
    userId: "u",
    membership: { organization_id: "o", role: "member", name: "Org" },
    project: { id: P } as never,
    githubAccount: () => null,
    connectGitHub() {},
    say() {},
    fail: (error: unknown) => failures.push(error),
    changed: () => Promise.resolve(),
  });
  await area.refresh([]);
  const watch = root.querySelector<HTMLButtonElement>(
    'button[aria-label="Watch lead\'s session"]',
  )!;
  watch.click();
  await area.refresh([], new Set(["session_steps"])); // waits for the panel's first read
  const panel = root.querySelector(".steps-panel")!;
  assert.match(panel.querySelector("h3")!.textContent!, /Steps of lead's current session/);
  assert.deepEqual(seqs(panel as HTMLElement), [0, 1]);

  const first = panel.querySelector("li.step");
  rows.push(step(2, { kind: "result", summary: "Done" }));
  urls.length = 0;
  await area.refresh([], new Set(["session_steps"]));
  assert.deepEqual(
    urls.map((u) => [u.pathname, u.searchParams.get("seq")]),
    [["/rest/v1/session_steps", "gt.1"]],
    "new steps alone: one read, of the steps after the last one",
  );
  assert.deepEqual(seqs(panel as HTMLElement), [0, 1, 2]);
  assert.equal(panel.querySelector("li.step"), first);

  urls.length = 0;
  await area.refresh([], new Set(["project_agents"]));
  assert.deepEqual(
    urls.map((u) => u.pathname.replace("/rest/v1/", "")).sort(),
    ["agent_sessions", "agent_status", "project_environment", "session_steps", "watchdog_alerts"],
    "other telemetry: the area's rows again, and the panel's new steps",
  );
  assert.ok(root.contains(panel), "the panel stays open across refreshes");
  [...panel.querySelectorAll("button")].find((b) => b.textContent === "Close")!.click();
  assert.equal(root.querySelector(".steps-panel"), null);
  assert.deepEqual(failures, []);
});

Deno.test("Live tells its listeners which tables' telemetry brought a tick", async () => {
  const { client } = fakeClient(() => []);
  const broadcasts: ((message: { event: string; payload?: Record<string, unknown> }) => void)[] =
    [];
  const fake = client as unknown as Record<string, unknown>;
  fake.channel = () => {
    const channel = {
      on: (_type: string, _filter: unknown, callback: (typeof broadcasts)[number]) => {
        broadcasts.push(callback);
        return channel;
      },
      subscribe: () => channel,
    };
    return channel;
  };
  fake.removeChannel = () => Promise.resolve("ok");
  (client.realtime as unknown as Record<string, unknown>).setAuth = () => Promise.resolve();
  const live = new Live(client as DashboardClient, {
    organizationId: "o",
    admin: false,
    connection() {},
    onError: (error) => {
      throw error;
    },
  });
  const ticks: (string[] | undefined)[] = [];
  live.listen((_events, telemetry) => {
    ticks.push(telemetry && [...telemetry]);
  });
  await live.start([P]);
  broadcasts[0]!({ event: "telemetry", payload: { table: "session_steps" } });
  broadcasts[0]!({ event: "telemetry", payload: { table: "session_steps" } });
  await new Promise((resolve) => setTimeout(resolve, 300));
  broadcasts[0]!({ event: "telemetry", payload: { table: "project_agents" } });
  broadcasts[0]!({ event: "telemetry", payload: { table: "session_steps" } });
  await new Promise((resolve) => setTimeout(resolve, 300));
  await live.now();
  live.stop();
  assert.deepEqual(ticks, [["session_steps"], ["project_agents", "session_steps"], undefined]);
});
