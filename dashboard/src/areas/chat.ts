/** Chat: the thread with the project's agents, and a composer. */
import type { MountArea } from "../area.ts";
import { newest, sendAgentMessage } from "../data.ts";
import type { Tables } from "../../../supabase/types/database.ts";
import { h, show, when } from "../ui.ts";

/** The thread from its rows, oldest first: the agents' messages and the members'. */
export function chatThread(messages: Tables<"agent_messages">[]): HTMLElement[] {
  if (messages.length === 0) return [h("li", { class: "empty" }, "No message yet.")];
  return messages.map((message) =>
    h(
      "li",
      { class: message.direction === "from_agent" ? "from-agent" : "from-user" },
      h(
        "span",
        { class: "author" },
        message.direction === "from_agent" ? message.agent ?? "agent" : "You",
      ),
      when(message.created_at),
      h("p", {}, message.content),
    )
  );
}

export const mountChat: MountArea = (root, context) => {
  const { client, project } = context;
  const thread = h("ol", { class: "thread", "aria-label": "Messages", "aria-live": "polite" });
  const text = h("textarea", { id: "message", rows: 3, maxlength: 20000, required: true });
  const send = h("button", { type: "submit" }, "Send");
  const form = h(
    "form",
    {
      class: "composer",
      onsubmit: async (event: Event) => {
        event.preventDefault();
        send.disabled = true;
        try {
          await sendAgentMessage(client, { p_project_id: project!.id, p_content: text.value });
          text.value = "";
          await area.refresh();
        } catch (error) {
          context.fail(error);
        } finally {
          send.disabled = false;
        }
      },
    },
    h("label", { for: "message" }, "Message to the agents"),
    text,
    send,
  );
  show(
    root,
    h("h2", {}, "Chat"),
    h(
      "p",
      { class: "hint" },
      "Agents read new messages on their next cycle. They may not reply yet: their answers appear here when they do.",
    ),
    thread,
    form,
  );
  // Every tick: a member's own messages (from any tab) have no event, only the agents' do.
  const area = {
    async refresh() {
      const messages = (await newest(client, "agent_messages", project!.id, "created_at", 100))
        .reverse();
      show(thread, ...chatThread(messages));
    },
  };
  return area;
};
