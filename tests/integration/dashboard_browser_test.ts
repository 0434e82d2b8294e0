/**
 * The reference dashboard in a real browser (Debian's Chromium) against the real local stack: a
 * person signs in, creates a project and watches it come up, talks to its agents, decides what
 * they ask, edits their persona, reads logs, reports and costs, sets its repository and secrets,
 * and stops, starts and deletes it; someone else sees none of it. Every area is photographed under test-results/dashboard/.
 */
import assert from "node:assert/strict";
import type { Page } from "puppeteer-core";
import { DEMO_ORGANIZATION_ID, DEMO_USER_ID, seed } from "../../local/database/seed.ts";
import {
  control,
  launchBrowser,
  openPage,
  screenshot,
  until,
  waitForText,
} from "../helpers/browser.ts";
import { createTestDatabase } from "../helpers/database.ts";
import { startServer } from "../helpers/server.ts";
import { eventually } from "../helpers/vm_api.ts";
import { startReceiver } from "../helpers/webhook_receiver.ts";

const FAST = {
  LOCAL_VM_BOOT_MS: "300",
  LOCAL_VM_STOP_MS: "300",
  LOCAL_VM_DELETE_MS: "300",
  LOCAL_AGENT_CYCLE_MS: "300",
  RECONCILE_INTERVAL_MS: "200",
  VM_REPORTER_RATE_LIMIT: "100000",
  // The walk does in about ninety seconds what a person does in many minutes: vm-api's per-minute
  // budget (20, the default) is the person's, and rate_limit tests hold it.
  VM_API_RATE_LIMIT: "60",
};

async function signIn(page: Page, email: string, password: string): Promise<void> {
  await page.locator("#email").fill(email);
  await page.locator("#password").fill(password);
  await control(page, "Sign in").click();
}

Deno.test("the dashboard, in Chromium, against the local stack", async (t) => {
  await using db = await createTestDatabase();
  await seed(db.url);
  const vmRoot = await Deno.makeTempDir({ prefix: "vm-service-dashboard-vms-" });
  await using server = await startServer(db.url, { ...FAST, LOCAL_VM_ROOT: vmRoot });
  await using browser = await launchBrowser();
  const page = await openPage(browser, `${server.origin}/`);
  const problems: string[] = [];
  page.on("pageerror", (error) => problems.push(String(error)));
  let projectId = "";
  const workspace = () => `${vmRoot}/${projectId}/workspace`;

  await t.step("the page is served with a strict Content-Security-Policy", async () => {
    const response = await fetch(`${server.origin}/`);
    await response.body?.cancel();
    const csp = response.headers.get("content-security-policy") ?? "";
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /script-src 'self'(;|$)/);
    assert.match(csp, /frame-ancestors 'none'/);
  });

  await t.step("a wrong password is told plainly; the right one signs in", async () => {
    await page.waitForSelector("#email");
    await screenshot(page, "00-sign-in");
    await signIn(page, "demo@example.test", "not-the-password");
    await waitForText(page, ".sign-in [role=alert]", "Invalid login credentials");
    await signIn(page, "demo@example.test", "demo-password");
    await waitForText(page, "header.top", "demo@example.test");
    await control(page, "Create project").wait();
  });

  await t.step(
    "a project created here becomes active, its idle team reported, without a reload",
    async () => {
      await page.locator("#new-name").fill("Browser project");
      await control(page, "Create project").click();
      await waitForText(page, ".project-header", "provisioning", 10_000);
      await until(
        page,
        `(document.querySelector(".project-header")?.textContent ?? "").includes("active") &&
       (document.querySelector(".project-header")?.textContent ?? "").includes("degraded")`,
      );
      [{ id: projectId }] = await db.sql<[{ id: string }]>`select id from public.projects`;
      await screenshot(page, "01-overview");
    },
  );

  await t.step("Agents lists the team with their status", async () => {
    await control(page, "Agents", "tab").click();
    await waitForText(page, "#area table", "reviewer");
    const text = await page.$eval("#area", (e) => e.textContent ?? "");
    for (const name of ["lead", "builder", "reviewer"]) assert.match(text, new RegExp(name));
    assert.match(text, /idle/, "a team without work is idle");
    await screenshot(page, "02-agents");
  });

  await t.step("a Chat message lands in the VM's inbox/", async () => {
    await control(page, "Chat", "tab").click();
    await waitForText(page, "#area", "may not reply yet");
    const landed = watchFor(`${workspace()}`, /\/inbox\/[^/]+\.json$/);
    await page.locator("#message").fill("Please write the release notes");
    await control(page, "Send").click();
    const file = await landed;
    assert.match(file, /inbox/);
    await waitForText(page, ".thread", "Please write the release notes");
    // The lead's Claude Code session did it: its answer is the lead's chat message.
    await waitForText(page, ".thread", "Done: Please write the release notes", 60_000);
    await screenshot(page, "03-chat");
  });

  await t.step(
    "an approval the VM asks for appears under Needs You and is approved there",
    async () => {
      await page.locator("#message").fill("@builder run `git push --force origin HEAD:main`");
      await control(page, "Send").click();
      await until(page, `Number(document.querySelector("#needs-you-count")?.textContent) > 0`);
      await control(page, "Needs You").click();
      await waitForText(page, ".approvals", "git_force_push");
      await screenshot(page, "04-needs-you");
      const first = await page.$eval(".approval", (e) => e.getAttribute("aria-label"));
      assert.ok(first);
      await page.locator(".approval .decide input").fill("Ship it");
      await page.locator(".approval .decide button").click(); // Approve, the first button
      const decided = await eventually(async () => {
        const [row] = await db.sql`
        select status, decision_comment from public.approvals
        where project_id = ${projectId} and status <> 'pending' order by decided_at desc limit 1`;
        return row;
      });
      assert.deepEqual({ ...decided }, { status: "approved", decision_comment: "Ship it" });
      // The VM carries it out and says so.
      await eventually(async () => {
        const [row] = await db.sql`
        select outcome from public.approvals where project_id = ${projectId}
          and status = 'approved' and outcome is not null`;
        return row;
      });
    },
  );

  await t.step("Approvals shows the decision and what the agent did", async () => {
    await page.locator(".project-link").click();
    await control(page, "Approvals", "tab").click();
    await waitForText(page, ".approvals", "Ship it");
    await screenshot(page, "05-approvals");
  });

  await t.step(
    "the approval's email in the mail catcher: its link opens a page that decides only on confirm",
    async () => {
      const mailUrl = /Mail URL:\s+(http:\/\/\S+)/.exec(server.output())?.[1];
      assert.ok(mailUrl, "start prints the mail catcher's page");
      // The printed address opens as printed, as a browser asks for it (the email is found on
      // that very page below).
      const printed = await fetch(mailUrl, { headers: { accept: "text/html" } });
      assert.equal(printed.status, 200);
      assert.match(printed.headers.get("content-type") ?? "", /text\/html/);
      await printed.body?.cancel();
      // The catcher emptied (its own API, as its trash button does), then another force push: a
      // new approval, emailed to the demo user with their own links.
      const emptied = await fetch(new URL("api/email/all", mailUrl), { method: "DELETE" });
      assert.ok(emptied.ok);
      await emptied.body?.cancel();
      await control(page, "Chat", "tab").click();
      await page.locator("#message").fill("@builder run `git push --force origin HEAD:main`");
      await control(page, "Send").click();
      const { id: approvalId } = await eventually(async () => {
        const [row] = await db.sql<{ id: string }[]>`
          select id from public.approvals where project_id = ${projectId} and status = 'pending'`;
        return row;
      }, { timeoutMs: 60_000 });

      await eventually(async () => {
        const emails = await (await fetch(new URL("api/email", mailUrl))).json() as {
          subject: string;
        }[];
        return emails.some((e) => e.subject.startsWith("Approval needed: git_force_push")) ||
          undefined;
      }, { timeoutMs: 30_000 });
      const mail = await openPage(browser, mailUrl);
      let confirm: Page | undefined;
      try {
        await mail.locator("::-p-text(Approval needed: git_force_push)").click();
        // MailDev shows an email in a sandboxed frame, which cannot show another site (the page
        // refuses to be framed): the click's navigation is followed in a tab, as a mail client
        // does.
        const followed = new Promise<string>((resolve) =>
          mail.on("request", (request) => {
            if (request.isNavigationRequest() && request.url().includes("/approval?")) {
              resolve(request.url());
            }
          })
        );
        // The email's HTML, in the frame MailDev shows it in, once it is drawn; MailDev may draw
        // the frame again meanwhile, so finding the link and clicking it are one attempt.
        let shot = false;
        await eventually(async () => {
          for (const frame of mail.frames()) {
            if (frame.url() !== "about:srcdoc" || frame.detached) continue;
            try {
              const anchor = await frame.$('a[href*="decision=approved"]');
              if (!anchor || !(await anchor.isVisible())) continue;
              if (!shot) {
                await screenshot(mail, "05-approval-email");
                shot = true;
              }
              await anchor.click();
              return true;
            } catch {
              // the frame was drawn again under the handle: look again
            }
          }
          return undefined;
        });
        const link = await followed;
        assert.match(link, /\/approval\?token=vma_[\w-]{43}&decision=approved$/);
        confirm = await openPage(browser, link);
        await waitForText(confirm, "main", "git_force_push");
        await control(confirm, "Confirm approval").wait();
        await screenshot(confirm, "05-approval-confirm");
        const [pending] = await db.sql`
          select status from public.approvals where id = ${approvalId}`;
        assert.equal(pending!.status, "pending", "opening the link decided nothing");

        await confirm.locator("#comment").fill("Approved from my email");
        await control(confirm, "Confirm approval").click();
        await waitForText(confirm, "[role=status]", "You approved");
        await screenshot(confirm, "05-approval-confirmed");
        const [decided] = await db.sql`
          select status, decided_by, decision_comment from public.approvals
          where id = ${approvalId}`;
        assert.deepEqual({ ...decided }, {
          status: "approved",
          decided_by: DEMO_USER_ID,
          decision_comment: "Approved from my email",
        });
        // The same link again is refused with the sentence saying why.
        await confirm.goto(link);
        await waitForText(confirm, "[role=alert]", "already approved by you");
      } finally {
        await mail.close();
        await confirm?.close();
        // The dashboard's tab in front again: a background tab draws no frames to click on.
        await page.bringToFront();
      }
    },
  );

  await t.step("a SOUL.md saved in Config lands in the VM's persona/", async () => {
    await control(page, "Config", "tab").click();
    await waitForText(page, "#area", "next cycle");
    await page.locator("#persona").fill("# Soul\nBe careful with production.");
    await control(page, "Save").click();
    const content = await eventually(async () => {
      try {
        return await Deno.readTextFile(`${workspace()}/persona/SOUL.md`);
      } catch {
        return undefined;
      }
    });
    assert.equal(content, "# Soul\nBe careful with production.");
    await waitForText(page, "#area table", "1");
    await screenshot(page, "06-config");
  });

  await t.step("Logs filtered to errors shows errors only", async () => {
    // An agent's error, as its audit report would bring it.
    await db.sql`insert into public.audit_events (project_id, agent, action, severity)
      values (${projectId}, 'lead', 'deploy_failed', 'error')`;
    await control(page, "Logs", "tab").click();
    await waitForText(page, "#area table", "lead: pushed ");
    await page.select("#severity", "error");
    await until(
      page,
      `[...document.querySelectorAll("#area tbody tr td:nth-child(2)")]
        .every((cell) => cell.textContent.trim() === "error") &&
       document.querySelector("#area table")?.textContent.includes("deploy_failed")`,
    );
    const severities = await page.$$eval(
      "#area tbody tr td:nth-child(2)",
      (cells) => cells.map((c) => c.textContent?.trim()),
    );
    assert.ok(severities.length > 0);
    assert.ok(severities.every((s) => s === "error"), severities.join(","));
    await screenshot(page, "07-logs-errors");
  });

  await t.step("Reports charts what the agents did", async () => {
    await control(page, "Reports", "tab").click();
    await page.waitForSelector("#area svg.chart");
    await screenshot(page, "08-reports");
  });

  await t.step("Costs shows what the reported CLI sessions cost", async () => {
    await control(page, "Costs", "tab").click();
    await waitForText(page, "#area table", "Browser project");
    const amounts = await page.$$eval(
      "#area td",
      (cells) =>
        cells.map((c) => c.textContent ?? "").filter((t) => t.startsWith("$")).map((t) =>
          Number(t.slice(1))
        ),
    );
    assert.ok(amounts.some((amount) => amount > 0), `costs shown: ${amounts.join(", ")}`);
    await screenshot(page, "09-costs");
  });

  await t.step("the page follows the data by push, with no clock between changes", async () => {
    await control(page, "Overview", "tab").click();
    await waitForText(page, "#connection", "Live", 20_000);
    const requests: string[] = [];
    const count = (request: { url(): string }) => requests.push(request.url());
    page.on("request", count);
    // Quiet: the team is idle and nothing changes, so nothing is asked (a 2 s clock asked 5 times).
    await new Promise((resolve) => setTimeout(resolve, 6_000));
    assert.deepEqual(requests, [], `asked while nothing changed: ${requests.join(", ")}`);
    // A change arrives by push: an audit entry the VM reports shows within seconds.
    const sent = Date.now();
    await db.sql`insert into public.audit_events (project_id, agent, action)
      values (${projectId}, 'reviewer', 'pushed_by_realtime')`;
    await waitForText(page, "#area table", "pushed_by_realtime", 5_000);
    page.off("request", count);
    console.log(`change on screen ${Date.now() - sent} ms after its commit`);
    assert.ok(requests.length <= 6, `${requests.length} requests for one change`);
  });

  await t.step("Webhooks: the secret shown once signs what the receiver gets", async () => {
    await using receiver = startReceiver();
    await control(page, "Webhooks").click();
    await page.locator("#endpoint-url").fill(receiver.url);
    await control(page, "Add endpoint").click();
    await waitForText(page, ".secret", "whsec_");
    const secret = await page.$eval(".secret-value", (e) => e.textContent ?? "");
    receiver.secrets.push(secret);
    await screenshot(page, "10-webhooks");
    await control(page, "I have copied it").click();
    await until(page, `!document.querySelector(".secret")?.textContent`);
    assert.ok(!(await page.content()).includes(secret), "the secret is gone from the page");

    await control(page, "Send test").click();
    await eventually(() => Promise.resolve(receiver.ofType("webhook.test")[0]));
    assert.equal(receiver.unverified, 0);
    await control(page, "Deliveries").click();
    await waitForText(page, "table", "webhook.test");
    await waitForText(page, "table", "succeeded");

    await control(page, "Rotate secret").click();
    await waitForText(page, ".secret", "24 hours");
    const rotated = await page.$eval(".secret-value", (e) => e.textContent ?? "");
    assert.notEqual(rotated, secret);
    await control(page, "I have copied it").click();

    await control(page, "Disable").click();
    await waitForText(page, "table", "disabled");
    await control(page, "Enable").click();
    await waitForText(page, "table", "enabled");
    await control(page, "Delete endpoint").click();
    await waitForText(page, "main", "Nothing yet.");
  });

  await t.step("Webhooks adds a Slack endpoint, which gets Slack messages", async () => {
    const received: { text: string; blocks: unknown[] }[] = [];
    const slack = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (r) => {
      received.push(await r.json());
      return new Response("ok");
    });
    try {
      await page.locator("#endpoint-url").fill(
        `http://127.0.0.1:${slack.addr.port}/services/T/B/X`,
      );
      await page.select("#endpoint-format", "slack");
      await control(page, "Add endpoint").click();
      await waitForText(page, "table", "Slack");
      assert.equal(await page.$eval(".secret", (e) => e.textContent ?? ""), "", "no secret shown");
      await control(page, "Send test").click();
      await eventually(() => Promise.resolve(received[0]));
      assert.equal(received[0]!.text, "webhook.test");
      await control(page, "Delete endpoint").click();
      await waitForText(page, "main", "Nothing yet.");
    } finally {
      await slack.shutdown();
    }
  });

  await t.step("Notifications: a person chooses which emails they get", async () => {
    await control(page, "Notifications").click();
    await waitForText(page, "main", "Email me when");
    const stuck = control(
      page,
      "A project is stuck starting, stopping or being created",
      "checkbox",
    );
    await stuck.click();
    await control(page, "Save notification preferences").click();
    await waitForText(page, ".notice", "you get 5 of 6 kinds of email");
    await screenshot(page, "10-notifications");
    const [row] = await db.sql`
      select email_event_types from public.notification_preferences where user_id = ${DEMO_USER_ID}`;
    assert.ok(!row!.email_event_types.includes("project.stuck"));
    assert.ok(row!.email_event_types.includes("approval.requested"));
    await stuck.click();
    await control(page, "Save notification preferences").click();
    await waitForText(page, ".notice", "you get 6 of 6 kinds of email");
  });

  await t.step("every field has a label, and the areas' tabs follow the arrow keys", async () => {
    await page.locator(".project-link").click();
    for (const area of ["Overview", "Chat", "Config", "Logs", "Settings"]) {
      await control(page, area, "tab").click();
      await until(
        page,
        `document.querySelector("#area")?.getAttribute("aria-label") === "${area}"`,
      );
      const unlabelled = await page.$$eval(
        "input, select, textarea",
        (fields) =>
          fields.filter((f) =>
            !(f as unknown as { labels: unknown[] }).labels?.length && !f.getAttribute("aria-label")
          ).map((f) => f.outerHTML),
      );
      assert.deepEqual(unlabelled, [], area);
    }
    await control(page, "Overview", "tab").click();
    await page.focus('[role="tab"][aria-selected="true"]');
    await page.keyboard.press("ArrowRight");
    await until(
      page,
      `document.activeElement?.getAttribute("role") === "tab" &&
       document.activeElement?.textContent === "Agents" &&
       document.activeElement?.getAttribute("aria-selected") === "true"`,
    );
  });

  await t.step("Stop, then Start, follow the VM without a reload", async () => {
    await page.locator(".project-link").click();
    await control(page, "Stop").click();
    await waitForText(page, ".project-header", "stopped", 30_000);
    await screenshot(page, "11-stopped");
    await control(page, "Start").click();
    await until(
      page,
      `(document.querySelector(".project-header")?.textContent ?? "").includes("active")`,
    );
  });

  await t.step("Settings sets the repository and secrets, listed by name only", async () => {
    const [{ id }] = await db.sql<[{ id: string }]>`
      select id from public.projects where name = 'Browser project'`;
    // A repository on this machine, which the local stack takes.
    const origin = await Deno.makeTempDir({ prefix: "vm-service-dashboard-origin-" });
    await new Deno.Command("git", { args: ["init", "--quiet", "--bare", origin] }).output();
    await page.locator(".project-link").click();
    await control(page, "Settings", "tab").click();
    await page.waitForSelector("#repository-url");
    await page.locator("#repository-url").fill(origin);
    await page.locator("#repository-branch").fill("main");
    await control(page, "Save repository").click();
    await waitForText(page, ".repository-current", origin);
    const [project] = await db.sql<[{ repository_url: string; repository_branch: string }]>`
      select repository_url, repository_branch from public.projects where id = ${id}`;
    assert.deepEqual({ ...project }, { repository_url: origin, repository_branch: "main" });

    const value = `ghp_browser_${crypto.randomUUID()}`;
    const valueOf = () =>
      page.$eval("#secret-value", (e) => (e as unknown as { value: string }).value);
    for (const [name, typed] of [["GIT_TOKEN", value], ["OLD_TOKEN", `old-${value}`]] as const) {
      await page.locator("#secret-name").fill(name);
      await page.locator("#secret-value").fill(typed);
      await control(page, "Save secret").click();
      await waitForText(page, ".project-secrets", name);
      assert.equal(await valueOf(), "", "the value field is cleared after the save");
    }
    await control(page, "Delete secret OLD_TOKEN").click();
    await until(
      page,
      `!(document.querySelector(".project-secrets")?.textContent ?? "").includes("OLD_TOKEN")`,
    );
    const names = await page.$$eval(
      ".project-secrets tbody td:first-child",
      (cells) => cells.map((c) => c.textContent?.trim()),
    );
    assert.deepEqual(names, ["GIT_TOKEN"]);
    assert.equal(
      await page.$eval("#secret-value", (e) => e.getAttribute("type")),
      "password",
      "a value is typed where it is not shown",
    );
    assert.ok(!(await page.content()).includes(value), "no value is on the page");
    const [stored] = await db.sql<[{ sealed: Uint8Array }]>`
      select value_sealed as sealed from private.project_secret_values
      where project_id = ${id} and name = 'GIT_TOKEN'`;
    assert.ok(!new TextDecoder().decode(stored.sealed).includes(value), "stored sealed");
    await screenshot(page, "12-settings-repository");
    await Deno.remove(origin, { recursive: true }).catch(() => {});
  });

  await t.step("Settings sets cost control; Costs shows the month against the budget", async () => {
    const [{ id }] = await db.sql<[{ id: string }]>`
      select id from public.projects where name = 'Browser project'`;
    await control(page, "Settings", "tab").click();
    await page.waitForSelector("#schedule-timezone");
    const zones = await page.$$eval("#schedule-timezone option", (o) => o.length);
    assert.ok(zones > 300, `the time zones offered: ${zones}`);
    await page.locator("#idle-stop-minutes").fill("45");
    await page.select("#schedule-timezone", "Australia/Sydney");
    await page.locator("#schedule-start").fill("0 9 * * 1-5");
    await page.locator("#schedule-stop").fill("0 17 * * 1-5");
    await page.locator("#monthly-budget").fill("25");
    await page.locator("#budget-alert-percent").fill("75");
    await control(page, "Save cost control").click();
    await waitForText(page, ".cost-control-current", "in Australia/Sydney");
    await waitForText(page, ".cost-control-current .next-start", "Australia/Sydney");
    const [row] = await db.sql<
      [{ idle: number; schedule: unknown; budget: string; percent: number; next: Date }]
    >`select idle_stop_minutes as idle, schedule, monthly_budget_usd::text as budget,
        budget_alert_percent as percent, next_scheduled_start_at as next
      from public.projects where id = ${id}`;
    assert.deepEqual(
      { ...row, next: undefined },
      {
        idle: 45,
        schedule: { timezone: "Australia/Sydney", start: "0 9 * * 1-5", stop: "0 17 * * 1-5" },
        budget: "25.00",
        percent: 75,
        next: undefined,
      },
    );
    const sydneyHour = new Intl.DateTimeFormat("en-GB", {
      timeZone: "Australia/Sydney",
      hour: "2-digit",
      minute: "2-digit",
    }).format(row.next);
    assert.equal(sydneyHour, "09:00", "the next start is 09:00 in Sydney");
    await screenshot(page, "12-settings-cost-control");

    await control(page, "Costs", "tab").click();
    await page.waitForSelector("#area svg.spend-bar");
    await waitForText(page, ".month-to-date figcaption", "of $25.00");
    const label = await page.$eval("#area svg.spend-bar", (e) => e.getAttribute("aria-label"));
    assert.match(label ?? "", /of \$25\.00 \(\d+% of the budget\); model \$[\d.]+, compute \$/);
    await screenshot(page, "09-costs-budget");
  });

  await t.step("an area has its address: reload and Back land where the person was", async () => {
    await control(page, "Logs", "tab").click();
    await until(page, `location.hash.endsWith("/logs")`);
    await control(page, "Costs", "tab").click();
    await until(page, `location.hash.endsWith("/costs")`);
    const address = await page.evaluate(() => location.hash);
    assert.match(address, /^#\/[0-9a-f-]{36}\/projects\/[0-9a-f-]{36}\/costs$/);
    await page.reload();
    await waitForText(page, "[role=tab][aria-selected=true]", "Costs");
    await waitForText(page, ".project-header", "Browser project");
    await page.goBack();
    await waitForText(page, "[role=tab][aria-selected=true]", "Logs");
    await page.goForward();
    await waitForText(page, "[role=tab][aria-selected=true]", "Costs");
  });

  await t.step(
    "the user menu shows the seeded GitHub account; Disconnect, then Connect again",
    async () => {
      await waitForText(page, "header.top .github-account", "GitHub: @demo-owner");
      await control(page, "Disconnect GitHub account @demo-owner").click();
      await control(page, "Connect GitHub").wait();
      const [gone] = await db.sql<[{ n: number }]>`
      select count(*)::int as n from public.github_accounts where user_id = ${DEMO_USER_ID}`;
      assert.equal(gone.n, 0);
      const before = new URL(page.url()).hash;
      await control(page, "Connect GitHub").click();
      // The GitHub stand-in's authorize page: one click as a chosen person.
      await control(page, "Authorize as demo-owner").click();
      await waitForText(page, ".notice", "GitHub connected as @demo-owner.");
      const back = new URL(page.url());
      assert.equal(back.searchParams.get("github"), null, "the parameter is taken out");
      assert.equal(back.hash, before, "back where the person left from");
      await waitForText(page, "header.top .github-account", "GitHub: @demo-owner");
      await screenshot(page, "20-github-connected");
    },
  );

  await t.step(
    "an unverified repository says why on Overview; Verify push access proves it",
    async () => {
      const demo = /demo repository: (http:\/\/\S+)/.exec(server.output())?.[1];
      assert.ok(demo, "start prints the GitHub stand-in's demo repository");
      // A GitHub project named before contract §18 (or by SQL): unverified.
      await db.sql`update public.projects set repository_url = ${demo} where id = ${projectId}`;
      await db
        .sql`delete from private.project_github_verifications where project_id = ${projectId}`;
      await page.reload();
      await control(page, "Overview", "tab").click();
      await waitForText(
        page,
        ".github-unverified",
        "pull requests, issues and the agents' GitHub token",
      );
      await screenshot(page, "21-overview-unverified");
      await control(page, "Settings", "tab").click();
      await waitForText(page, ".github-verification", "Not verified");
      await control(page, "Verify push access").click();
      await waitForText(page, ".github-verification", "by @demo-owner");
      const [proved] = await db.sql<[{ login: string }]>`
      select login from private.project_github_verifications where project_id = ${projectId}`;
      assert.equal(proved.login, "demo-owner");
      await screenshot(page, "22-settings-verified");
    },
  );

  await t.step("Settings deletes the project after its name is typed", async () => {
    await control(page, "Settings", "tab").click();
    await page.waitForSelector("form.danger-zone button");
    const remove = control(page, "Delete");
    assert.equal(
      await page.$eval(
        "form.danger-zone button",
        (b) => (b as unknown as { disabled: boolean }).disabled,
      ),
      true,
    );
    await page.locator("#confirm-delete").fill("Browser project");
    await screenshot(page, "12-settings");
    await remove.click();
    await eventually(async () => {
      const [{ left }] = await db.sql<
        [{ left: number }]
      >`select count(*)::int as left from public.projects`;
      return left === 0 ? true : undefined;
    }).catch(async (error) => {
      await screenshot(page, "12-settings-failed");
      throw error;
    });
    await until(page, `document.querySelectorAll(".project-link").length === 0`).catch(
      async (error) => {
        await screenshot(page, "12-settings-failed");
        throw error;
      },
    );
    const [{ left }] = await db.sql<
      [{ left: number }]
    >`select count(*)::int as left from public.projects`;
    assert.equal(left, 0);
    // Deleted means gone from the page: the organization, and one sentence saying so.
    await waitForText(page, ".notice", "Browser project was deleted.");
    assert.equal(await page.$(".project-header"), null);
    assert.equal(await page.$("form.danger-zone"), null);
    assert.match(await page.evaluate(() => location.hash), /^#\/[0-9a-f-]{36}$/);
    await screenshot(page, "13-deleted");
  });

  await t.step("an ended session sends the person back to sign-in", async () => {
    await db.sql`delete from auth.sessions`;
    // The stored access token runs out; refreshing it fails, as it does when an admin ends sessions.
    await page.evaluate(() => {
      const key = "vm-service-dashboard-session";
      const session = JSON.parse(localStorage.getItem(key)!);
      session.expires_at = Math.floor(Date.now() / 1000) - 60;
      localStorage.setItem(key, JSON.stringify(session));
    });
    await page.reload();
    await waitForText(page, ".sign-in [role=alert]", "Your session has ended");
  });

  await t.step("a member of another organization sees none of it", async () => {
    const [{ id: outsider }] = await db.sql<[{ id: string }]>`
      insert into auth.users (id, email, encrypted_password)
      values (gen_random_uuid(), 'outsider@example.test',
              extensions.crypt('outsider-password', extensions.gen_salt('bf')))
      returning id`;
    await db
      .sql`with org as (insert into public.organizations (name) values ('Other org') returning id)
      insert into public.organization_members (organization_id, user_id, role)
      select id, ${outsider}, 'owner' from org`;
    // Something of the demo organization's worth hiding: a project it still has.
    await db.sql`insert into public.projects (organization_id, name, status)
      values (${DEMO_ORGANIZATION_ID}, 'Second project', 'stopped')`;
    // A separate browser context: no storage shared with the demo user's page.
    const other = await (await browser.createBrowserContext()).newPage();
    await other.setViewport({ width: 1366, height: 900 });
    await other.goto(`${server.origin}/`);
    await signIn(other, "outsider@example.test", "outsider-password");
    await waitForText(other, "main", "No project yet");
    const text = await other.$eval("body", (e) => e.textContent ?? "");
    assert.match(text, /Other org/);
    assert.doesNotMatch(text, /Demo organization|Browser project|Second project/);
    await screenshot(other, "13-outsider");
  });

  assert.deepEqual(problems, [], "no error in the page");
});

/** Resolves with the first path under `root` (created later) that matches `pattern`. */
async function watchFor(root: string, pattern: RegExp): Promise<string> {
  await Deno.mkdir(`${root}/inbox`, { recursive: true });
  const watcher = Deno.watchFs(root, { recursive: true });
  const timer = setTimeout(() => watcher.close(), 30_000);
  try {
    for await (const event of watcher) {
      const hit = event.paths.find((path) => pattern.test(path));
      if (hit) return hit;
    }
    throw new Error(`nothing matching ${pattern} appeared under ${root} in 30 s`);
  } finally {
    clearTimeout(timer);
    try {
      watcher.close();
    } catch { /* already closed */ }
  }
}
