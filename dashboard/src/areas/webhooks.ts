/**
 * Webhooks (organization owners and admins): endpoints of either format (Standard Webhooks, or
 * Slack incoming-webhook messages), the secret shown once, rotation, disabling, deliveries, replay
 * and a test event.
 */
import type { MountArea } from "../area.ts";
import { webhookDeliveries, webhookEndpoints, webhooksAction } from "../data.ts";
import { SUBSCRIBABLE_EVENT_TYPES } from "../../../supabase/functions/_contract/event_types.ts";
import { badge, h, show, showChanged, table, when } from "../ui.ts";

export const mountWebhooks: MountArea = (root, context) => {
  const { client, membership } = context;
  const organizationId = membership.organization_id;
  const secretBox = h("div", { class: "secret", "aria-live": "polite" });
  const endpoints = h("div", {});
  const deliveries = h("div", {});
  let open: string | undefined;

  const url = h("input", {
    id: "endpoint-url",
    type: "url",
    required: true,
    placeholder: "https://example.com/hooks",
  });
  const description = h("input", { id: "endpoint-description", maxlength: 500 });
  const format = h(
    "select",
    { id: "endpoint-format" },
    h("option", { value: "standard" }, "Standard Webhooks (signed JSON)"),
    h("option", { value: "slack" }, "Slack incoming webhook"),
  );
  const types = SUBSCRIBABLE_EVENT_TYPES.map((type) =>
    h("input", { type: "checkbox", value: type, id: `type-${type}` })
  );
  const create = h("button", { type: "submit" }, "Add endpoint");

  function revealSecret(secret: string, what: string): void {
    show(
      secretBox,
      h("p", {}, `${what} Copy it now: it is shown once and never again.`),
      h("code", { class: "secret-value" }, secret),
      h(
        "button",
        { type: "button", class: "secondary", onclick: () => show(secretBox) },
        "I have copied it",
      ),
    );
  }

  const act = (run: () => Promise<unknown>, done: string) => async () => {
    try {
      await run();
      context.say(done);
      endpoints.dataset.shown = "";
      await area.refresh();
    } catch (error) {
      context.fail(error);
    }
  };

  show(
    root,
    h("h1", {}, "Webhooks"),
    h(
      "p",
      { class: "hint" },
      "Events of this organization are sent to these endpoints, signed (Standard Webhooks). Only owners and admins see this.",
    ),
    secretBox,
    h(
      "form",
      {
        class: "endpoint-form",
        onsubmit: async (event: Event) => {
          event.preventDefault();
          create.disabled = true;
          try {
            const chosen = types.filter((box) => box.checked).map((box) => box.value);
            const answer = await webhooksAction(client, "create", {
              organization_id: organizationId,
              url: url.value.trim(),
              ...(chosen.length ? { event_types: chosen as typeof SUBSCRIBABLE_EVENT_TYPES } : {}),
              ...(description.value.trim() ? { description: description.value.trim() } : {}),
              format: format.value === "slack" ? "slack" : "standard",
            });
            url.value = "";
            description.value = "";
            if (format.value === "slack") {
              show(secretBox);
              context.say(
                "Slack endpoint added: Slack's URL is its credential, no secret to keep.",
              );
            } else {
              revealSecret(answer.secret, "The endpoint's signing secret.");
            }
            endpoints.dataset.shown = "";
            await area.refresh();
          } catch (error) {
            context.fail(error);
          } finally {
            create.disabled = false;
          }
        },
      },
      h("h2", {}, "New endpoint"),
      h("label", { for: "endpoint-url" }, "Endpoint URL"),
      url,
      h("label", { for: "endpoint-format" }, "Format"),
      format,
      h("label", { for: "endpoint-description" }, "Description"),
      description,
      h(
        "fieldset",
        {},
        h("legend", {}, "Events (none checked: all)"),
        ...types.map((box) =>
          h("span", { class: "check" }, box, h("label", { for: box.id }, box.value))
        ),
      ),
      create,
    ),
    h("h2", {}, "Endpoints"),
    endpoints,
    deliveries,
  );

  const area = {
    async refresh() {
      const rows = await webhookEndpoints(client, organizationId);
      showChanged(endpoints, rows, () => [
        table(
          ["Endpoint", "Format", "State", "Events", "Actions"],
          rows.map((endpoint) => [
            h(
              "span",
              {},
              h("code", {}, endpoint.url),
              endpoint.description ? h("div", { class: "meta" }, endpoint.description) : null,
            ),
            endpoint.format === "slack" ? "Slack" : "Standard",
            h(
              "span",
              {},
              badge(endpoint.enabled ? "enabled" : "disabled"),
              endpoint.disabled_reason
                ? h("div", { class: "meta" }, endpoint.disabled_reason)
                : null,
            ),
            endpoint.event_types?.join(", ") ?? "all",
            h(
              "span",
              { class: "actions" },
              h("button", {
                type: "button",
                class: "secondary",
                onclick: () => {
                  open = endpoint.id;
                  void area.refresh();
                },
              }, "Deliveries"),
              h("button", {
                type: "button",
                class: "secondary",
                onclick: act(
                  () => webhooksAction(client, "test", { endpoint_id: endpoint.id }),
                  "A test event is on its way.",
                ),
              }, "Send test"),
              h("button", {
                type: "button",
                class: "secondary",
                onclick: async () => {
                  try {
                    const answer = await webhooksAction(client, "rotate_secret", {
                      endpoint_id: endpoint.id,
                    });
                    revealSecret(
                      answer.secret,
                      "The new secret; the previous one keeps signing for 24 hours.",
                    );
                  } catch (error) {
                    context.fail(error);
                  }
                },
              }, "Rotate secret"),
              h("button", {
                type: "button",
                class: "secondary",
                onclick: act(
                  () =>
                    webhooksAction(client, "update", {
                      endpoint_id: endpoint.id,
                      enabled: !endpoint.enabled,
                    }),
                  endpoint.enabled ? "Endpoint disabled." : "Endpoint enabled.",
                ),
              }, endpoint.enabled ? "Disable" : "Enable"),
              h("button", {
                type: "button",
                class: "secondary",
                onclick: act(
                  () =>
                    webhooksAction(client, "replay", {
                      endpoint_id: endpoint.id,
                      since: new Date(Date.now() - 86_400_000).toISOString(),
                    }),
                  "The last 24 hours of events are queued again.",
                ),
              }, "Replay 24 h"),
              h("button", {
                type: "button",
                class: "danger",
                onclick: act(
                  () => webhooksAction(client, "delete", { endpoint_id: endpoint.id }),
                  "Endpoint deleted.",
                ),
              }, "Delete endpoint"),
            ),
          ]),
        ),
      ]);
      if (!open || !rows.some((endpoint) => endpoint.id === open)) {
        show(deliveries);
        return;
      }
      const sent = await webhookDeliveries(client, open, 20);
      const endpoint = rows.find((e) => e.id === open)!;
      showChanged(deliveries, sent, () => [
        h("h2", {}, `Deliveries to ${endpoint.url}`),
        table(
          ["Event", "Occurred", "Status", "Attempts", "Last answer"],
          sent.map((d) => [
            d.event_type,
            when(d.event_occurred_at),
            badge(d.status),
            String(d.attempts),
            d.last_status_code ? String(d.last_status_code) : d.last_error ?? "—",
          ]),
        ),
      ]);
    },
  };
  return area;
};
