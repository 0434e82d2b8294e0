/**
 * Approvals: what the agents asked, decided once with an optional comment. `Needs You` is the same
 * card for every pending approval across the organization's projects.
 */
import type { AreaContext, MountArea } from "../area.ts";
import { type Approval, decideApproval, newest, pendingApprovals, type Project } from "../data.ts";
import { badge, h, show, showChanged, when } from "../ui.ts";

function approvalCard(
  approval: Approval,
  context: AreaContext,
  decided: () => Promise<void>,
  projectName?: string,
): HTMLElement {
  const commentId = `comment-${approval.id}`;
  const comment = h("input", { id: commentId, maxlength: 5000 });
  const decide = (decision: "approved" | "rejected") => async () => {
    try {
      await decideApproval(context.client, {
        p_approval_id: approval.id,
        p_decision: decision,
        ...(comment.value.trim() ? { p_comment: comment.value.trim() } : {}),
      });
      context.say(`${decision === "approved" ? "Approved" : "Rejected"}: ${approval.action}.`);
      await decided();
    } catch (error) {
      context.fail(error);
    }
  };
  const pending = approval.status === "pending";
  // The approval an address names (a link from an email or Slack) is marked and brought into view.
  const named = context.approvalId === approval.id;
  return h(
    "article",
    {
      id: `approval-${approval.id}`,
      class: `approval risk-${approval.risk}${named ? " named" : ""}`,
      "aria-label": `${approval.action} by ${approval.agent}`,
      ...(named ? { "aria-current": "true" } : {}),
    },
    h(
      "header",
      {},
      h("strong", {}, approval.action),
      badge(approval.risk),
      badge(approval.status),
      projectName ? h("span", { class: "meta" }, projectName) : null,
      h("span", { class: "meta" }, approval.agent, " · ", when(approval.created_at)),
    ),
    h("p", {}, approval.description),
    pending
      ? h(
        "div",
        { class: "decide" },
        h("label", { for: commentId }, "Comment"),
        comment,
        h("button", { type: "button", onclick: decide("approved") }, "Approve"),
        h("button", { type: "button", class: "danger", onclick: decide("rejected") }, "Reject"),
        h("span", { class: "meta" }, "expires ", when(approval.expires_at)),
      )
      : h(
        "p",
        { class: "meta" },
        approval.decided_at ? "Decided " : "",
        approval.decided_at ? when(approval.decided_at) : null,
        approval.decision_comment ? ` — “${approval.decision_comment}”` : "",
        approval.outcome ? ` · the agent ${approval.outcome} it` : "",
      ),
  );
}

export const mountApprovals: MountArea = (root, context) => {
  const list = h("div", { class: "approvals" });
  show(root, h("h2", {}, "Approvals"), list);
  const area = {
    async refresh() {
      const approvals = await newest(
        context.client,
        "approvals",
        context.project!.id,
        "created_at",
        50,
      );
      const ordered = [...approvals].sort((a, b) =>
        Number(b.status === "pending") - Number(a.status === "pending")
      );
      showChanged(
        list,
        ordered,
        () =>
          ordered.length
            ? ordered.map((a) => approvalCard(a, context, () => area.refresh()))
            : [h("p", { class: "empty" }, "No approval asked for yet.")],
      );
      list.querySelector(".approval.named")?.scrollIntoView({ block: "center" });
    },
  };
  return area;
};

export function mountNeedsYou(root: HTMLElement, context: AreaContext, projects: Project[]) {
  const list = h("div", { class: "approvals" });
  show(
    root,
    h("h1", {}, "Needs You"),
    h("p", { class: "hint" }, "Agents waiting for a decision, across your projects, oldest first."),
    list,
  );
  const names = new Map(projects.map((p) => [p.id, p.name]));
  const area = {
    async refresh() {
      const pending = await pendingApprovals(context.client, projects.map((p) => p.id));
      showChanged(
        list,
        pending,
        () =>
          pending.length
            ? pending.map((a) =>
              approvalCard(a, context, async () => {
                await context.changed();
                await area.refresh();
              }, names.get(a.project_id))
            )
            : [h("p", { class: "empty" }, "Nothing waits for you.")],
      );
    },
  };
  return area;
}
