/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
/**
 * `/approval?token=…&decision=approved|rejected`: where an emailed approval link lands (contract
 * §13). Opening it decides nothing (mail scanners and previews open links): the page reads the
 * approval through approval-links' GET and shows it (agent, action, description, risk, expiry)
 * with a confirm button; only pressing it sends the decision (approval-links' POST), as the person
 * the link was sent to. No sign-in: the token is the credential. A bundle of its own, without
 * supabase-js: `fetch` and the contract's types.
 */
import type {
  ApprovalLinkDecision,
  ApprovalLinkInfo,
} from "../../supabase/functions/_contract/approval_links.ts";
import { h, show } from "./ui.ts";

interface SiteConfig {
  supabaseUrl: string;
}

type Decision = "approved" | "rejected";

const root = document.getElementById("app")!;
const params = new URLSearchParams(location.search);
const token = params.get("token") ?? "";
let decision: Decision = params.get("decision") === "rejected" ? "rejected" : "approved";

function page(...children: (Node | string | null)[]): void {
  show(
    root,
    h(
      "main",
      { class: "center approval-page" },
      h("p", { class: "brand-line" }, "VM Service"),
      ...children,
    ),
  );
}

function problem(sentence: string): void {
  page(
    h("h1", {}, "This link cannot decide"),
    h("p", { role: "alert", class: "notice error" }, sentence),
    h("p", {}, h("a", { href: "./" }, "Open the dashboard")),
  );
}

async function answerOf<T>(response: Response): Promise<T> {
  const body = await response.json().catch(() => ({})) as { data?: T; error?: string };
  if (!response.ok) {
    throw new Error(
      body.error ??
        (response.status === 429
          ? "Too many tries from here: wait a minute and reload the page."
          : "The service cannot be reached: reload the page to try again."),
    );
  }
  return body.data as T;
}

function render(url: string, approval: ApprovalLinkInfo): void {
  const verb = decision === "approved" ? "Approve" : "Reject";
  const comment = h("textarea", { id: "comment", rows: 3, maxlength: 5000 });
  const status = h("p", { role: "status", "aria-live": "polite", class: "notice" });
  const confirm = h("button", {
    type: "submit",
    class: decision === "rejected" ? "danger" : "",
  }, decision === "approved" ? "Confirm approval" : "Confirm rejection");
  const expires = new Date(approval.expires_at);
  page(
    h("h1", {}, `${verb} this request?`),
    h(
      "dl",
      { class: "approval-facts" },
      h("dt", {}, "Project"),
      h("dd", {}, approval.project_name),
      h("dt", {}, "Agent"),
      h("dd", {}, approval.agent),
      h("dt", {}, "Action"),
      h("dd", {}, h("strong", {}, approval.action)),
      h("dt", {}, "Description"),
      h("dd", { class: "description" }, approval.description),
      h("dt", {}, "Risk"),
      h("dd", {}, h("span", { class: `badge badge-${approval.risk}` }, approval.risk)),
      h("dt", {}, "Expires"),
      h(
        "dd",
        {},
        h("time", { datetime: expires.toISOString() }, expires.toLocaleString()),
      ),
    ),
    h(
      "form",
      {
        class: "confirm",
        "aria-label": `${verb} the request`,
        onsubmit: async (event: Event) => {
          event.preventDefault();
          confirm.disabled = true;
          show(status, "Sending your decision…");
          try {
            const decided = await answerOf<ApprovalLinkDecision>(
              await fetch(url, {
                method: "POST",
                headers: { "content-type": "application/json" },
                body: JSON.stringify({
                  token,
                  decision,
                  ...(comment.value.trim() ? { comment: comment.value.trim() } : {}),
                }),
              }),
            );
            page(
              h("h1", {}, decided.status === "approved" ? "Approved" : "Rejected"),
              h(
                "p",
                { role: "status", class: "notice" },
                `You ${decided.status} "${approval.action}" on ${approval.project_name}. ` +
                  "The agent is told on its next cycle.",
              ),
              h("p", {}, h("a", { href: "./" }, "Open the dashboard")),
            );
          } catch (error) {
            confirm.disabled = false;
            show(status, (error as Error).message);
            status.className = "notice error";
            status.setAttribute("role", "alert");
          }
        },
      },
      h("label", { for: "comment" }, "Comment (optional)"),
      comment,
      confirm,
      status,
    ),
    h(
      "p",
      { class: "hint" },
      "Nothing is decided until you confirm. ",
      h("a", {
        href: "#",
        onclick: (event: Event) => {
          event.preventDefault();
          decision = decision === "approved" ? "rejected" : "approved";
          render(url, approval);
        },
      }, decision === "approved" ? "Reject instead" : "Approve instead"),
    ),
  );
}

async function boot(): Promise<void> {
  if (!token) {
    problem("This page needs the whole link from the email: its token is missing.");
    return;
  }
  const config = await fetch("./config.json").then((r) => r.json() as Promise<SiteConfig>);
  const url = `${config.supabaseUrl.replace(/\/+$/, "")}/functions/v1/approval-links`;
  try {
    const approval = await answerOf<ApprovalLinkInfo>(
      await fetch(`${url}?${new URLSearchParams({ token })}`),
    );
    render(url, approval);
  } catch (error) {
    problem((error as Error).message);
  }
}

boot().catch(() => problem("The page could not start: reload to try again."));
