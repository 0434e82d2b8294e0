/**
 * Notifications (contract §13): which events the signed-in person receives by email. Every type is
 * on until they choose; what they save is the types they still want (set_notification_preferences,
 * read back from notification_preferences). An approval request's email carries their own approve
 * and reject links.
 */
import type { Area, AreaContext } from "../area.ts";
import { notificationPreferences, setNotificationPreferences } from "../data.ts";
import {
  EMAIL_EVENT_LABELS,
  EMAIL_EVENT_TYPES,
} from "../../../supabase/functions/_contract/notification_types.ts";
import { h, show, when } from "../ui.ts";

export function mountNotifications(
  root: HTMLElement,
  context: AreaContext,
  email: string,
): Area {
  const boxes = EMAIL_EVENT_TYPES.map((type) =>
    h("input", {
      type: "checkbox",
      value: type,
      id: `email-${type}`,
      name: "email_event_types",
    })
  );
  const saved = h("p", { class: "meta" });
  const save = h("button", { type: "submit" }, "Save notification preferences");
  let loaded = false;

  show(
    root,
    h("h1", {}, "Notifications"),
    h(
      "p",
      { class: "hint" },
      `Emails go to ${email || "your address"} for the projects you are a member of. An ` +
        "approval request's email has your own Approve and Reject links: each opens a page " +
        "where you confirm.",
    ),
    h(
      "form",
      {
        class: "notification-form",
        "aria-label": "Email notifications",
        onsubmit: async (event: Event) => {
          event.preventDefault();
          save.disabled = true;
          try {
            const wanted = boxes.filter((box) => box.checked).map((box) => box.value);
            const stored = await setNotificationPreferences(context.client, {
              p_email_event_types: wanted,
            });
            context.say(
              stored.length === 0
                ? "Saved: you get no emails."
                : `Saved: you get ${stored.length} of ${EMAIL_EVENT_TYPES.length} kinds of email.`,
            );
            await area.refresh([]);
          } catch (error) {
            context.fail(error);
          } finally {
            save.disabled = false;
          }
        },
      },
      h(
        "fieldset",
        {},
        h("legend", {}, "Email me when"),
        ...boxes.map((box) =>
          h(
            "span",
            { class: "check" },
            box,
            h(
              "label",
              { for: box.id },
              EMAIL_EVENT_LABELS[box.value as keyof typeof EMAIL_EVENT_LABELS],
            ),
          )
        ),
      ),
      save,
      saved,
    ),
  );

  const area: Area = {
    async refresh() {
      const row = await notificationPreferences(context.client, context.userId);
      // What the person is ticking is theirs until they save: only the first read sets boxes.
      if (!loaded) {
        for (const box of boxes) {
          box.checked = row === null || row.email_event_types.includes(box.value);
        }
        loaded = true;
      }
      show(
        saved,
        row
          ? h("span", {}, "Last saved ", when(row.updated_at), ".")
          : "Every kind is on until you choose.",
      );
    },
  };
  return area;
}
