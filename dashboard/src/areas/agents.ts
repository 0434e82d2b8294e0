/**
 * Agents: each agent's status and task, the watchdog's alerts, and the sessions they ran; a running
 * agent's session watched step by step, and any past session's steps (contract §17, agents/); the
 * Environment: each agent's setup and last check (contract §20, agents/environment_panel.ts).
 */
import { type MountArea, onlyTelemetry } from "../area.ts";
import {
  latestSessionOf,
  newest,
  queueVmCommand,
  type SessionStep,
  sessionSteps,
  type StepRange,
} from "../data.ts";
import type { Tables } from "../../../supabase/types/database.ts";
import { badge, type Child, h, money, show, table, when } from "../ui.ts";
import { scorecardsView } from "./agents/scorecards.ts";
import { type StepsPanel, stepsPanel } from "./agents/steps_panel.ts";
import { environmentView } from "./agents/environment_panel.ts";

export { scorecardsView } from "./agents/scorecards.ts";
export { environmentView, NO_ENVIRONMENT } from "./agents/environment_panel.ts";
export { stepItem } from "./agents/step_item.ts";
export { STEP_PAGE, stepsPanel } from "./agents/steps_panel.ts";

type AgentSession = Tables<"agent_sessions">;

/** What the area's buttons do: watch a running agent's session, read a session's steps. */
export interface AgentActions {
  watch(agent: string): void;
  /** Ends what the agent's session is doing; it waits for the next message (contract §17). */
  interrupt(agent: string): void;
  steps(session: AgentSession): void;
}

const NO_ACTIONS: AgentActions = { watch() {}, interrupt() {}, steps() {} };

/** The scorecards are read again at most this often (a view over what happened: not per event). */
const SCORECARDS_EVERY_MS = 60_000;

/** How far back an agent's current session is looked for among the steps (by their `at`). */
const CURRENT_SESSION_WITHIN_MS = 24 * 3600_000;

/** The area from its rows: the watchdog's alerts, the agents, the sessions they ran. */
export function agentsView(
  rows: {
    status: Tables<"agent_status">[];
    watchdog: Tables<"watchdog_alerts">[];
    history: AgentSession[];
  },
  actions: AgentActions = NO_ACTIONS,
): { alerts: Child[]; agents: HTMLElement; sessions: HTMLElement } {
  return {
    alerts: rows.watchdog.map((alert) =>
      h("p", { class: "alert", role: "alert" }, alert.message ?? "")
    ),
    agents: table(
      ["Agent", "Status", "Current task", "Last activity", "Error", "Session"],
      [...rows.status].sort((a, b) => (a.name ?? "").localeCompare(b.name ?? "")).map((agent) => [
        agent.name ?? "",
        h("span", {}, badge(agent.status), agent.silent ? badge("silent") : null),
        agent.current_task ?? "—",
        when(agent.last_activity_at),
        agent.error ?? "",
        agent.status === "active" && agent.name
          ? h(
            "span",
            {},
            h("button", {
              type: "button",
              class: "secondary",
              "aria-label": `Watch ${agent.name}'s session`,
              onclick: () => actions.watch(agent.name!),
            }, "Watch"),
            " ",
            h("button", {
              type: "button",
              class: "secondary",
              "aria-label": `Interrupt ${agent.name}`,
              onclick: () => actions.interrupt(agent.name!),
            }, "Interrupt"),
          )
          : "",
      ]),
    ),
    sessions: table(
      ["Agent", "Model", "Started", "Duration", "Tokens in / out", "Cost", "Exit", "Steps"],
      rows.history.map((session) => [
        session.agent ?? "",
        session.model ?? "",
        when(session.started_at),
        session.duration_seconds === null ? "running" : `${Math.round(session.duration_seconds)} s`,
        `${session.input_tokens ?? 0} / ${session.output_tokens ?? 0}`,
        money(session.cost_usd),
        session.exit_status ?? "—",
        session.session_id
          ? h("button", {
            type: "button",
            class: "secondary",
            "aria-label": `Steps of ${session.agent ?? "the agent"}'s session started ${
              session.started_at ? new Date(session.started_at).toLocaleString() : ""
            }`.trim(),
            onclick: () => actions.steps(session),
          }, "Steps")
          : "",
      ]),
    ),
  };
}

export const mountAgents: MountArea = (root, context) => {
  const { client, project } = context;
  const alerts = h("div", {});
  const agents = h("div", {});
  const sessions = h("div", {});
  const scorecards = h("div", {});
  let scoredAt = 0;
  const environment = h("div", {});
  /** Where the steps of the session being watched or read are shown: one at a time. */
  const steps = h("div", {});
  let panel: StepsPanel | undefined;
  let history: AgentSession[] = [];

  function open(title: string, live: boolean, load: (range: StepRange) => Promise<SessionStep[]>) {
    panel = stepsPanel({
      title,
      live,
      load,
      close: () => {
        panel = undefined;
        show(steps);
      },
      fail: context.fail,
    });
    show(steps, panel.element);
    panel.focus();
    void panel.newer();
  }

  const actions: AgentActions = {
    async interrupt(agent) {
      try {
        await queueVmCommand(client, {
          p_project_id: project!.id,
          p_type: "interrupt_agent",
          p_payload: { agent },
        });
        context.say(
          `Interrupt requested: ${agent} stops what it is doing and waits for your next message.`,
        );
      } catch (error) {
        context.fail(error);
      }
    },
    watch(agent) {
      // Its open session in the history if the VM reported one; else the session it has reported
      // steps of most recently, found at the first read (and looked for again until there is one).
      let sessionId = history.find((s) => s.agent === agent && s.ended_at === null)?.session_id ??
        undefined;
      open(`${agent}'s current session`, true, async (range) => {
        sessionId ??= await latestSessionOf(
          client,
          project!.id,
          agent,
          new Date(Date.now() - CURRENT_SESSION_WITHIN_MS),
        ) ?? undefined;
        return sessionId ? sessionSteps(client, project!.id, sessionId, range) : [];
      });
    },
    steps(session) {
      const started = session.started_at ? new Date(session.started_at).toLocaleString() : "";
      open(
        `${session.agent ?? "the agent"}'s session started ${started}`.trim(),
        session.ended_at === null,
        (range) => sessionSteps(client, project!.id, session.session_id!, range),
      );
    },
  };
  /** Setup again at once, for an agent whose setup failed (contract §20). */
  const retrySetup = async (agent: string) => {
    try {
      await queueVmCommand(client, {
        p_project_id: project!.id,
        p_type: "retry_setup",
        p_payload: { agents: [agent] },
      });
      context.say(`Setup requested again: ${agent} runs it before its next task.`);
    } catch (error) {
      context.fail(error);
    }
  };
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
    steps,
    h("h2", {}, "Environment"),
    environment,
    h("h2", {}, "Session history"),
    sessions,
    h("h2", {}, "Scorecards"),
    scorecards,
  );
  return {
    async refresh(events, telemetry) {
      // New steps alone (several a second while a session runs) move only the open panel.
      if (!onlyTelemetry(events, telemetry, "session_steps")) {
        const [status, watchdog, sessionRows, environmentRows] = await Promise.all([
          newest(client, "agent_status", project!.id, "name", 100),
          newest(client, "watchdog_alerts", project!.id, "last_heard_at", 10),
          newest(client, "agent_sessions", project!.id, "started_at", 20),
          newest(client, "project_environment", project!.id, "agent", 100),
        ]);
        history = sessionRows;
        const view = agentsView({ status, watchdog, history }, actions);
        show(alerts, ...view.alerts);
        show(agents, view.agents);
        show(sessions, view.sessions);
        if (Date.now() - scoredAt >= SCORECARDS_EVERY_MS) {
          scoredAt = Date.now();
          const cards = await newest(client, "agent_scorecards", project!.id, "period_start", 120);
          show(scorecards, ...scorecardsView(cards));
        }
        show(environment, environmentView(environmentRows, retrySetup));
      }
      if (panel?.live) await panel.newer();
    },
  };
};
