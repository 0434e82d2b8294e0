/** Agents: each agent's status and task, the watchdog's alerts, and the sessions they ran. */
import type { MountArea } from "../area.ts";
import { newest, queueVmCommand } from "../data.ts";
import type { Tables } from "../../../supabase/types/database.ts";
import { badge, type Child, h, money, show, table, when } from "../ui.ts";

/** The area from its rows: the watchdog's alerts, the agents, the sessions they ran. */
export function agentsView(rows: {
  status: Tables<"agent_status">[];
  watchdog: Tables<"watchdog_alerts">[];
  history: Tables<"agent_sessions">[];
}): { alerts: Child[]; agents: HTMLElement; sessions: HTMLElement } {
  return {
    alerts: rows.watchdog.map((alert) =>
      h("p", { class: "alert", role: "alert" }, alert.message ?? "")
    ),
    agents: table(
      ["Agent", "Status", "Current task", "Last activity", "Error"],
      [...rows.status].sort((a, b) => (a.name ?? "").localeCompare(b.name ?? "")).map((agent) => [
        agent.name ?? "",
        h("span", {}, badge(agent.status), agent.silent ? badge("silent") : null),
        agent.current_task ?? "—",
        when(agent.last_activity_at),
        agent.error ?? "",
      ]),
    ),
    sessions: table(
      ["Agent", "Model", "Started", "Duration", "Tokens in / out", "Cost", "Exit"],
      rows.history.map((session) => [
        session.agent ?? "",
        session.model ?? "",
        when(session.started_at),
        session.duration_seconds === null ? "running" : `${Math.round(session.duration_seconds)} s`,
        `${session.input_tokens ?? 0} / ${session.output_tokens ?? 0}`,
        money(session.cost_usd),
        session.exit_status ?? "—",
      ]),
    ),
  };
}

export const mountAgents: MountArea = (root, context) => {
  const { client, project } = context;
  const alerts = h("div", {});
  const agents = h("div", {});
  const sessions = h("div", {});
  const restart = h("button", {
    type: "button",
    class: "secondary",
    onclick: async () => {
      try {
        await queueVmCommand(client, { p_project_id: project!.id, p_type: "restart_agents" });
        context.say("Restart requested: the agents restart on their next cycle.");
      } catch (error) {
        context.fail(error);
      }
    },
  }, "Restart agents");
  show(
    root,
    alerts,
    h("div", { class: "row" }, h("h2", {}, "Agents"), restart),
    agents,
    h("h2", {}, "Session history"),
    sessions,
  );
  return {
    async refresh() {
      const [status, watchdog, history] = await Promise.all([
        newest(client, "agent_status", project!.id, "name", 100),
        newest(client, "watchdog_alerts", project!.id, "last_heard_at", 10),
        newest(client, "agent_sessions", project!.id, "started_at", 20),
      ]);
      const view = agentsView({ status, watchdog, history });
      show(alerts, ...view.alerts);
      show(agents, view.agents);
      show(sessions, view.sessions);
    },
  };
};
