/**
 * Whose repository (contract §18): the person's own GitHub account, and whether push access to the
 * project's repository was proved — by whom and when, or why not. Owners and admins verify it by
 * saving the repository again (vm-api `update` with the same `repository_url`), which the platform
 * checks with their connected GitHub account.
 */
import type { GitHubAccount, GitHubRepository } from "../../data.ts";
import { type Child, h } from "../../ui.ts";

/** Why the repository is not verified, as status says it (or the plain fact). */
export function unverifiedReason(github: GitHubRepository): string {
  return github.unverified_reason ??
    `No one has proved push access to ${github.owner}/${github.repo} yet.`;
}

/** The person's GitHub account, or a button to connect one; nothing until it is read. */
export function accountLine(
  account: GitHubAccount | null | undefined,
  connect: () => void,
): Child[] {
  if (account === undefined) return [];
  if (account === null) {
    return [
      h(
        "p",
        { class: "github-account-line" },
        "Your GitHub account is not connected. ",
        h("button", { type: "button", class: "secondary", onclick: connect }, "Connect GitHub"),
      ),
    ];
  }
  return [h("p", { class: "github-account-line" }, `Your GitHub account: @${account.login}.`)];
}

export interface VerificationOptions {
  /** Owners and admins get the button; members read. */
  admin: boolean;
  account: GitHubAccount | null | undefined;
  verify(): void;
}

/** Who proved push access and when; else why not, with `Verify push access` for admins. */
export function verificationView(
  github: GitHubRepository,
  { admin, account, verify }: VerificationOptions,
): Child[] {
  const repository = `${github.owner}/${github.repo}`;
  if (github.verified) {
    const at = github.verified_at ? new Date(github.verified_at) : undefined;
    return [
      h(
        "p",
        { class: "github-verification" },
        h("span", { class: "badge badge-enabled" }, "✓ Verified"),
        ` by @${github.verified_by ?? "?"}`,
        at ? " on " : null,
        at
          ? h(
            "time",
            { datetime: at.toISOString(), title: at.toLocaleString() },
            at.toLocaleDateString(undefined, { dateStyle: "medium" }),
          )
          : null,
        `: push access to ${repository} is proved.`,
      ),
    ];
  }
  const reason = h(
    "p",
    { class: "github-verification" },
    h("span", { class: "badge badge-pending" }, "Not verified"),
    ` ${unverifiedReason(github)}`,
  );
  if (!admin) return [reason];
  const connected = Boolean(account);
  return [
    reason,
    h("button", {
      type: "button",
      disabled: !connected,
      "aria-describedby": "verify-hint",
      onclick: verify,
    }, "Verify push access"),
    h(
      "p",
      { class: "hint", id: "verify-hint" },
      account
        ? `Checks with your GitHub account (@${account.login}) that you may push to ${repository}.`
        : "Connect your GitHub account first: push access is checked with it.",
    ),
  ];
}
