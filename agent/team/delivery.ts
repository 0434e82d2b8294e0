/**
 * How the team's work reaches the project (contract §16, "Delivery"): pushed to the project's
 * branch (`push`, §11), or each task on a branch of its own from that branch, which the platform
 * turns into a pull request (`pull_request`): the runner pushes that branch only, never forced and
 * never the base, and reports it on `/pull-requests`.
 */
import type { Manifest } from "./types.ts";
import type { Task } from "./task_board.ts";

export type Delivery = NonNullable<Manifest["delivery"]>;

/** The manifest's delivery; a manifest kept from before it had one pushes. */
export function deliveryOf(manifest: Manifest | undefined): Delivery {
  return manifest?.delivery ?? { mode: "push", branch_prefix: "agents/", draft: false };
}

/** `<branch_prefix><agent>/<slug of the task>-<6 hex of its id>`: one branch a task. */
export function taskBranch(prefix: string, agent: string, task: Pick<Task, "id" | "text">): string {
  const slug = task.text.toLowerCase().normalize("NFKD").replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "").slice(0, 40).replace(/-+$/, "") || "task";
  const hex = task.id.toLowerCase().replace(/[^0-9a-f]/g, "").slice(0, 6).padEnd(6, "0");
  return `${prefix}${agent}/${slug}-${hex}`;
}
