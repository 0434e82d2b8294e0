/**
 * The page's top bar: the organization picker, Needs You and its count, Webhooks (owners and
 * admins), Notifications, whether the page is live, and the user menu: who is signed in, their
 * GitHub account (Connect GitHub, or the login and Disconnect), and Sign out.
 */
import type { Place } from "../address.ts";
import type { GitHubAccount, Membership } from "../data.ts";
import type { Connection } from "../store.ts";
import { type Child, h, show } from "../ui.ts";

export interface TopBarOptions {
  orgs: Membership[];
  email: string;
  signOut: () => void;
  github: GitHubActions;
  /** The organization shown, when a button is pressed. */
  org(): string;
  viewOf(): Place["view"];
  go(next: Place): void;
}

export interface GitHubActions {
  connect(): void;
  disconnect(): void;
}

/** The user menu's GitHub account: nothing until it is read. */
export function githubAccountView(
  account: GitHubAccount | null | undefined,
  { connect, disconnect }: GitHubActions,
): Child[] {
  if (account === undefined) return [];
  if (account === null) {
    return [
      h("button", { type: "button", class: "secondary", onclick: connect }, "Connect GitHub"),
    ];
  }
  return [
    h("span", { class: "github-login" }, `GitHub: @${account.login}`),
    h("button", {
      type: "button",
      class: "secondary",
      "aria-label": `Disconnect GitHub account @${account.login}`,
      onclick: disconnect,
    }, "Disconnect"),
  ];
}

export function topBar({ orgs, email, signOut, github, org, viewOf, go }: TopBarOptions) {
  const header = h("header", { class: "top" });
  const needsYouCount = h("span", { class: "count", id: "needs-you-count" }, "0");
  /** Whether the page is live: a lost connection is visible, and so is its return. */
  const connectionBadge = h("span", { class: "connection", id: "connection", role: "status" });
  const githubSlot = h("span", { class: "github-account" });
  return {
    header,
    showGitHub(account: GitHubAccount | null | undefined): void {
      show(githubSlot, ...githubAccountView(account, github));
    },
    showConnection(state: Connection): void {
      connectionBadge.dataset.state = state;
      show(
        connectionBadge,
        state === "live" ? "Live" : state === "connecting" ? "Connecting…" : "Reconnecting…",
      );
    },
    /** How many approvals wait for the user, across the organization's projects. */
    showNeedsYou(pending: number): void {
      show(needsYouCount, String(pending));
      needsYouCount.setAttribute("aria-label", `${pending} approvals waiting for you`);
    },
    /** Draws the bar for the organization shown and the view it is on. */
    render(membership: Membership): void {
      const admin = membership.role === "owner" || membership.role === "admin";
      const orgPicker = h(
        "select",
        {
          id: "organization",
          onchange: (event: Event) =>
            go({ view: "organization", org: (event.target as HTMLSelectElement).value }),
        },
        ...orgs.map((o) =>
          h("option", {
            value: o.organization_id,
            selected: o.organization_id === membership.organization_id,
          }, o.name)
        ),
      );
      show(
        header,
        h("span", { class: "brand" }, "VM Service"),
        h("label", { for: "organization" }, "Organization"),
        orgPicker,
        h(
          "span",
          { class: "needs-you" },
          h("button", {
            type: "button",
            class: "secondary",
            "aria-pressed": String(viewOf() === "needs-you"),
            "aria-describedby": "needs-you-count",
            onclick: () => go({ view: "needs-you", org: org() }),
          }, "Needs You"),
          needsYouCount,
        ),
        admin
          ? h("button", {
            type: "button",
            class: "secondary",
            "aria-pressed": String(viewOf() === "webhooks"),
            onclick: () => go({ view: "webhooks", org: org() }),
          }, "Webhooks")
          : null,
        h("button", {
          type: "button",
          class: "secondary",
          "aria-pressed": String(viewOf() === "notifications"),
          onclick: () => go({ view: "notifications", org: org() }),
        }, "Notifications"),
        connectionBadge,
        h(
          "span",
          { class: "user-menu", role: "group", "aria-label": "Your account" },
          h("span", { class: "who" }, email),
          githubSlot,
          signOutButton(signOut),
        ),
      );
    },
  };
}

export function signOutButton(signOut: () => void): HTMLElement {
  return h("button", { type: "button", class: "secondary", onclick: signOut }, "Sign out");
}
