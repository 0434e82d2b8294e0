/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
/// <reference lib="deno.ns" />
/**
 * The repository's environment in the dashboard (contract §20, issue 45) without a browser
 * (linkedom): Agents' Environment panel from public.project_environment's rows (each agent's
 * setup, how long it took, the last check with its log; Retry setup on a failed one queues
 * retry_setup for that agent), and Settings' environment section (members read it; an owner's
 * form saves system_packages and check_command with vm-api `update`, and a refusal is shown).
 */
import assert from "node:assert/strict";
import { parseHTML } from "linkedom";

const dom = parseHTML("<!doctype html><html><body></body></html>");
Object.assign(globalThis, { document: dom.document, Node: dom.Node });

const { environmentView, NO_ENVIRONMENT, mountAgents } = await import(
  "../../dashboard/src/areas/agents.ts"
);
const { environmentSettings, packageNames } = await import(
  "../../dashboard/src/areas/settings.ts"
);
const { DashboardError } = await import("../../supabase/client/dashboard.ts");
const { memoryClient } = await import("../helpers/dashboard_memory.ts");
type EnvironmentRow =
  import("../../dashboard/src/areas/agents/environment_panel.ts").EnvironmentRow;
type AreaContext = import("../../dashboard/src/area.ts").AreaContext;
type Project = import("../../dashboard/src/data.ts").Project;

const P = "11111111-1111-4111-8111-111111111111";
const O = "22222222-2222-4222-8222-222222222222";
const AT = "2026-12-01T10:00:00.000Z";

function row(agent: string, fields: Partial<EnvironmentRow> = {}): EnvironmentRow {
  return {
    project_id: P,
    agent,
    setup_status: "succeeded",
    setup_hash: "abc123",
    setup_seconds: 42.3,
    setup_finished_at: AT,
    setup_log_tail: "done",
    last_check_status: null,
    last_check_at: null,
    last_check_seconds: null,
    last_check_log_tail: null,
    last_check_pushed: null,
    updated_at: AT,
    ...fields,
  };
}

const cells = (table: Element) =>
  [...table.querySelectorAll("tbody tr")].map((tr) =>
    [...tr.querySelectorAll("td")].map((td) => td.textContent?.trim())
  );

function contextOf(client: AreaContext["client"], role = "owner") {
  const said: string[] = [];
  const failed: unknown[] = [];
  const context: AreaContext = {
    client,
    userId: "u",
    membership: { organization_id: O, role, name: "Acme" },
    project: { id: P, organization_id: O } as Project,
    githubAccount: () => null,
    connectGitHub: () => {},
    say: (message) => said.push(message),
    fail: (error) => failed.push(error),
    changed: () => Promise.resolve(),
  };
  return { context, said, failed };
}

const submit = (form: Element) =>
  form.dispatchEvent(new dom.Event("submit", { cancelable: true }) as unknown as Event);

async function settled(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise((resolve) => setTimeout(resolve, 0));
}

// --- Agents: the Environment panel ------------------------------------------------------------

Deno.test("Environment: each agent's setup, how long it took, the last check and its log", () => {
  const retried: string[] = [];
  const table = environmentView([
    row("reviewer", {
      setup_status: "failed",
      setup_seconds: 185,
      setup_log_tail: "E: Unable to locate package nope",
      last_check_status: "passed",
      last_check_at: AT,
      last_check_seconds: 3,
      last_check_log_tail: "ok",
    }),
    row("builder", {
      last_check_status: "failed",
      last_check_at: AT,
      last_check_seconds: 12.5,
      last_check_log_tail: "FAIL login_test.ts",
      last_check_pushed: true,
    }),
    row("lead", { setup_status: "running", setup_seconds: null, setup_finished_at: null }),
  ], (agent) => retried.push(agent));
  const rows = cells(table);
  assert.deepEqual(rows.map((r) => r[0]), ["builder", "lead", "reviewer"], "by name");
  assert.deepEqual(rows[0]!.slice(1, 3), ["succeeded", "42 s"]);
  assert.equal(rows[0]![4], "failedpushed failing");
  assert.match(rows[0]![5] ?? "", /\(13 s\)$/);
  assert.deepEqual(rows[1]!.slice(1, 5), ["running", "—", "—", "—"]);
  assert.equal(rows[2]![2], "3 min 5 s");

  const [builder, , reviewer] = [...table.querySelectorAll("tbody tr")];
  // The check's log is there to open; a setup's only when it failed.
  assert.deepEqual(
    [...builder!.querySelectorAll("details")].map((d) => d.querySelector("summary")?.textContent),
    ["Check log"],
  );
  assert.equal(builder!.querySelector("details pre")?.textContent, "FAIL login_test.ts");
  const logs = [...reviewer!.querySelectorAll("details pre")].map((pre) => pre.textContent);
  assert.deepEqual(logs, ["E: Unable to locate package nope", "ok"]);

  // Retry only where setup failed, named for its agent.
  const buttons = [...table.querySelectorAll("button")];
  assert.deepEqual(buttons.map((b) => b.getAttribute("aria-label")), ["Retry reviewer's setup"]);
  (buttons[0] as HTMLButtonElement).click();
  assert.deepEqual(retried, ["reviewer"]);
  assert.equal(table.querySelector("caption")?.textContent, "Each agent's setup and last check");
});

Deno.test("Environment: nothing reported yet says where setup and the check come from", () => {
  const empty = environmentView([]);
  assert.equal(empty.textContent, NO_ENVIRONMENT);
  assert.match(NO_ENVIRONMENT, /\.agents\/setup\.sh/);
  assert.match(NO_ENVIRONMENT, /\.agents\/check\.sh/);
});

Deno.test("Agents reads project_environment and Retry setup queues retry_setup for the agent", async () => {
  const { client, calls } = memoryClient(({ path }) => ({
    body: path === "/rest/v1/project_environment"
      ? [row("builder", { setup_status: "failed", setup_log_tail: "exit 1" })]
      : path === "/rest/v1/rpc/queue_vm_command"
      ? "33333333-3333-4333-8333-333333333333"
      : [],
  }));
  const { context, said, failed } = contextOf(client);
  const root = document.createElement("div");
  const area = mountAgents(root, context);
  await area.refresh([], undefined);
  const read = calls.find((c) => c.path === "/rest/v1/project_environment");
  assert.ok(read, "the panel reads the read model");
  assert.match(read.query, new RegExp(`project_id=eq\\.${P}`));
  const headings = [...root.querySelectorAll("h2")].map((h2) => h2.textContent);
  assert.deepEqual(headings, ["Agents", "Environment", "Session history", "Scorecards"]);

  const retry = root.querySelector<HTMLButtonElement>(
    'button[aria-label="Retry builder\'s setup"]',
  )!;
  retry.click();
  await settled();
  assert.deepEqual(failed, []);
  const queued = calls.find((c) => c.path === "/rest/v1/rpc/queue_vm_command");
  assert.deepEqual(queued?.body, {
    p_project_id: P,
    p_type: "retry_setup",
    p_payload: { agents: ["builder"] },
  });
  assert.match(said[0] ?? "", /Setup requested again: builder/);
});

// --- Settings: the environment ----------------------------------------------------------------

Deno.test("Settings, environment: package names are split on spaces, commas and lines", () => {
  assert.deepEqual(packageNames(" libpq-dev,ripgrep\n g++  "), ["libpq-dev", "ripgrep", "g++"]);
  assert.deepEqual(packageNames("   "), []);
});

Deno.test("Settings, environment: members read it, without the form", () => {
  const { context } = contextOf(memoryClient(() => ({ body: [] })).client, "member");
  const environment = environmentSettings(context, () => Promise.resolve());
  environment.render(false);
  environment.draw({ system_packages: [], check_command: null });
  const section = environment.section;
  assert.equal(section.querySelector("form"), null);
  assert.equal(section.querySelector("h3")?.textContent, "Environment");
  assert.deepEqual([...section.querySelectorAll("dd")].map((dd) => dd.textContent), [
    "None",
    "The repository's .agents/check.sh, if any",
  ]);
  environment.draw({ system_packages: ["ripgrep", "libpq-dev"], check_command: "npm test" });
  assert.deepEqual([...section.querySelectorAll("dd")].map((dd) => dd.textContent), [
    "ripgrep libpq-dev",
    "npm test",
  ]);
});

Deno.test("Settings, environment: an owner's form saves with vm-api update; a 400 is shown", async () => {
  let refuse = false;
  const { client, calls } = memoryClient(({ path, body }) =>
    path !== "/functions/v1/vm-api" ? { body: [] } : refuse
      ? {
        status: 400,
        body: {
          error: 'system_packages: "Bad_Name" is not a Debian package name',
          code: "invalid_request",
        },
      }
      : { body: { data: { project: { id: P, system_packages: [], ...(body ?? {}) } } } }
  );
  const { context, said, failed } = contextOf(client);
  let refreshed = 0;
  const environment = environmentSettings(context, () => {
    refreshed++;
    return Promise.resolve();
  });
  environment.render(true);
  environment.draw({ system_packages: ["curl"], check_command: "make test" });
  const section = environment.section;
  const field = (id: string) => section.querySelector<HTMLInputElement>(`#${id}`)!;
  assert.equal(field("environment-packages").value, "curl", "the form starts from the row");
  assert.equal(field("environment-check-command").value, "make test");
  for (const id of ["environment-packages", "environment-check-command"]) {
    assert.ok(section.querySelector(`label[for="${id}"]`)?.textContent, `${id} is labelled`);
  }

  field("environment-packages").value = "libpq-dev, ripgrep";
  field("environment-check-command").value = "  ";
  submit(section.querySelector("form")!);
  await settled();
  assert.deepEqual(failed, []);
  assert.deepEqual(calls.at(-1)!.body, {
    action: "update",
    project_id: P,
    system_packages: ["libpq-dev", "ripgrep"],
    check_command: null,
  });
  assert.equal(refreshed, 1);
  assert.match(said[0] ?? "", /Environment saved/);

  refuse = true;
  field("environment-packages").value = "Bad_Name";
  submit(section.querySelector("form")!);
  await settled();
  assert.equal(failed.length, 1);
  const refusal: unknown = failed[0];
  assert.ok(refusal instanceof DashboardError);
  assert.equal(refusal.status, 400);
  assert.match(refusal.message, /"Bad_Name" is not a Debian package name/);
  assert.equal(refreshed, 1, "nothing saved, nothing read again");
});
