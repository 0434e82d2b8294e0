/**
 * Settings' GitHub (contract §16): the connection (vm-api `status`'s `project.github`: a GitHub
 * project with the App installed, the link to install it, or a repository that is not on GitHub),
 * the person's GitHub account and whose push access verified the repository (contract §18,
 * github_verification.ts), and how the agents' work is delivered — by pull request or by push,
 * drafts, the issues label, the branch prefix, the CI fix rounds — which every member reads and
 * owners and admins change (vm-api `update`).
 */
import type { AreaContext } from "../../area.ts";
import {
  type DeliverySettings,
  type GitHubRepository,
  projectGitHub,
  projectRepository,
  updateProject,
} from "../../data.ts";
import { type Child, h, show, showChanged } from "../../ui.ts";
import { accountLine, unverifiedReason, verificationView } from "./github_verification.ts";

/** The connection as a person reads it; `undefined` while status has not answered. */
export function connectionView(github: GitHubRepository | null | undefined): Child[] {
  if (github === undefined) return [h("p", { class: "hint" }, "Reading the connection…")];
  if (github === null) {
    return [
      h(
        "p",
        { class: "github-connection" },
        "Not a GitHub repository: work is pushed to the branch.",
      ),
    ];
  }
  const repository = `${github.owner}/${github.repo}`;
  if (github.installed) {
    return [
      h(
        "p",
        { class: "github-connection" },
        h("span", { class: "badge badge-enabled" }, "✓ Installed"),
        // Unverified, nothing arrives yet: the verification below says why.
        github.verified
          ? ` The GitHub App is installed on ${repository}: the agents' work arrives as pull requests.`
          : ` The GitHub App is installed on ${repository}.`,
      ),
    ];
  }
  const safe = /^https?:\/\//i.test(github.install_url);
  return [
    h(
      "p",
      { class: "github-connection" },
      h("span", { class: "badge badge-pending" }, "Not installed"),
      ` The GitHub App is not installed on ${repository} yet. `,
      safe
        ? h(
          "a",
          { href: github.install_url, target: "_blank", rel: "noopener noreferrer" },
          `Install the GitHub App on ${repository}`,
        )
        : `Install the GitHub App on ${repository}: ${github.install_url}`,
    ),
  ];
}

const DELIVERY: Record<string, string> = {
  pull_request: "Pull requests (one per task)",
  push: "Push to the branch",
};

/**
 * The delivery settings as a person reads them; a project that is not on GitHub (`github` null)
 * delivers by push whatever is stored.
 */
export function deliveryView(
  settings: DeliverySettings,
  github: GitHubRepository | null | undefined,
): Child[] {
  const mode = github === null ? "push" : settings.delivery;
  return [
    h(
      "dl",
      { class: "delivery-current" },
      h("dt", {}, "Delivery"),
      h("dd", {}, DELIVERY[mode] ?? mode),
      h("dt", {}, "Draft pull requests"),
      h("dd", {}, settings.draft_pull_requests ? "Yes" : "No"),
      h("dt", {}, "Issues label"),
      h("dd", {}, h("code", {}, settings.agents_label)),
      h("dt", {}, "Branch prefix"),
      h("dd", {}, h("code", {}, settings.branch_prefix)),
      h("dt", {}, "CI fix rounds"),
      h("dd", {}, String(settings.ci_fix_rounds)),
    ),
  ];
}

/**
 * The GitHub section; `refresh` reads the whole page again after a save. The connection comes
 * from vm-api `status`, asked once when the section is drawn, again on `Check again` and after a
 * save (not on every tick: an open page spends none of the user's vm-api budget).
 */
export function githubSettings(context: AreaContext, refresh: () => Promise<void>) {
  const { client } = context;
  const project = context.project!;
  let github: GitHubRepository | null | undefined;
  let settings: DeliverySettings | null = null;
  let admin = false;

  const connection = h("div", { class: "github-current", "aria-live": "polite" });
  const account = h("div", {});
  const verification = h("div", { "aria-live": "polite" });
  const current = h("div", {});
  const recheck = h("button", {
    type: "button",
    onclick: () => void connect(),
  }, "Check the GitHub connection again");

  const delivery = h("select", { id: "github-delivery", "aria-describedby": "delivery-hint" });
  const draft = h("input", { id: "github-draft", type: "checkbox" });
  const label = h("input", {
    id: "github-agents-label",
    type: "text",
    autocomplete: "off",
    spellcheck: "false",
    required: true,
    maxlength: 50,
    "aria-describedby": "agents-label-hint",
  });
  const prefix = h("input", {
    id: "github-branch-prefix",
    type: "text",
    autocomplete: "off",
    spellcheck: "false",
    required: true,
    maxlength: 100,
    pattern: "[A-Za-z0-9][A-Za-z0-9._/\\-]*",
    "aria-describedby": "branch-prefix-hint",
  });
  const rounds = h("input", {
    id: "github-ci-fix-rounds",
    type: "number",
    min: 0,
    max: 20,
    step: 1,
    required: true,
    "aria-describedby": "ci-fix-rounds-hint",
  });
  const save = h("button", { type: "submit" }, "Save GitHub settings");

  /** The delivery modes this project may have: pull_request only for a GitHub project. */
  function fillDelivery(): void {
    const modes = github ? ["pull_request", "push"] : ["push"];
    const chosen = github === null ? "push" : settings?.delivery ?? "pull_request";
    const selected = modes.includes(chosen) ? chosen : modes[0]!;
    show(
      delivery,
      ...modes.map((mode) =>
        h("option", { value: mode, selected: mode === selected }, DELIVERY[mode]!)
      ),
    );
    delivery.disabled = github === undefined;
  }

  /** Fills the form from the row (when nobody is typing in it: after a save, and at first). */
  function fill(row: DeliverySettings): void {
    draft.checked = row.draft_pull_requests;
    label.value = row.agents_label;
    prefix.value = row.branch_prefix;
    rounds.value = String(row.ci_fix_rounds);
    fillDelivery();
  }

  const form = h(
    "form",
    {
      class: "settings-form",
      "aria-label": "GitHub",
      onsubmit: async (event: Event) => {
        event.preventDefault();
        save.disabled = true;
        try {
          const { project: saved } = await updateProject(client, {
            project_id: project.id,
            // Only a GitHub project chooses; every other repository is pushed to.
            ...(github ? { delivery: delivery.value as "pull_request" | "push" } : {}),
            draft_pull_requests: draft.checked,
            agents_label: label.value.trim(),
            branch_prefix: prefix.value.trim(),
            ci_fix_rounds: Number(rounds.value),
          });
          settings = saved;
          fill(saved);
          context.say(
            saved.delivery === "pull_request" && github
              ? "GitHub settings saved: each task is delivered as a pull request."
              : "GitHub settings saved.",
          );
          await refresh();
        } catch (error) {
          context.fail(error);
        } finally {
          save.disabled = false;
        }
      },
    },
    h("label", { for: "github-delivery" }, "Delivery"),
    delivery,
    h(
      "p",
      { class: "hint", id: "delivery-hint" },
      "Pull requests: each task on a branch of its own and a pull request for it (only for a " +
        "GitHub project). Push: the agents push to the repository's branch.",
    ),
    h(
      "div",
      { class: "check" },
      draft,
      h("label", { for: "github-draft" }, "Open pull requests as drafts"),
    ),
    h("label", { for: "github-agents-label" }, "Issues label"),
    label,
    h(
      "p",
      { class: "hint", id: "agents-label-hint" },
      "An issue with this label is a task for the agents.",
    ),
    h("label", { for: "github-branch-prefix" }, "Branch prefix"),
    prefix,
    h(
      "p",
      { class: "hint", id: "branch-prefix-hint" },
      "Each task's branch is <prefix><agent>/<slug>-<6 hex>, e.g. agents/builder/add-login-1a2b3c.",
    ),
    h("label", { for: "github-ci-fix-rounds" }, "CI fix rounds"),
    rounds,
    h(
      "p",
      { class: "hint", id: "ci-fix-rounds-hint" },
      "How many times the agent is asked to fix failed checks on one pull request (0 to 20).",
    ),
    save,
  );
  const section = h("section", { "aria-labelledby": "github-heading" });
  let formFilled = false;

  function drawCurrent(): void {
    showChanged(
      connection,
      { github: github === undefined ? "unknown" : github },
      () => connectionView(github),
    );
    const person = context.githubAccount();
    showChanged(
      account,
      { person: person === undefined ? "unknown" : person },
      () => accountLine(person, context.connectGitHub),
    );
    showChanged(
      verification,
      { github: github ?? null, person: person ?? null, admin },
      () => github ? verificationView(github, { admin, account: person, verify }) : [],
    );
    if (settings) {
      showChanged(
        current,
        { settings, github: github === null },
        () => deliveryView(settings!, github),
      );
    }
  }

  /** Asks vm-api `status` for the connection. */
  async function connect(): Promise<void> {
    try {
      api.connect(await projectGitHub(client, project.id));
    } catch (error) {
      context.fail(error);
    }
  }

  /**
   * Saves the repository the project names now (another admin may have changed it since the page
   * was drawn) again: the platform checks with the person's GitHub account that they may push.
   */
  async function verify(): Promise<void> {
    const button = verification.querySelector("button");
    if (button) button.disabled = true;
    try {
      const repositoryUrl = (await projectRepository(client, project.id))?.repository_url;
      // No repository any more: status says so (no GitHub repository to verify).
      if (repositoryUrl) {
        await updateProject(client, { project_id: project.id, repository_url: repositoryUrl });
      }
      await connect();
      if (repositoryUrl && github) {
        const repository = `${github.owner}/${github.repo}`;
        context.say(
          github.verified
            ? `Push access verified: @${github.verified_by} may push to ${repository}.`
            : `Not verified yet: ${unverifiedReason(github)}`,
        );
      }
    } catch (error) {
      context.fail(error);
    } finally {
      if (button) button.disabled = !context.githubAccount();
    }
  }

  const api = {
    section,
    /** Draws the section, with the form for those who may change it. */
    render(mayChange: boolean): void {
      admin = mayChange;
      show(
        section,
        h("h3", { id: "github-heading" }, "GitHub"),
        h(
          "p",
          { class: "hint" },
          "How the agents' work reaches the repository: pull requests on GitHub, or pushes.",
        ),
        connection,
        account,
        verification,
        github ? recheck : null,
        current,
        admin ? form : null,
      );
      drawCurrent();
    },
    /** The connection as status answered it; the delivery modes follow it. */
    connect(next: GitHubRepository | null): void {
      const changed = next !== github;
      github = next;
      fillDelivery();
      if (changed) api.render(admin);
      else drawCurrent();
    },
    /** Asks status for the connection (once, when Settings is drawn). */
    check: connect,
    /** Shows the settings as the project's row has them now; the form is filled the first time. */
    draw(row: DeliverySettings | null): void {
      if (!row) return;
      settings = row;
      if (!formFilled) fill(row);
      formFilled = true;
      drawCurrent();
    },
  };
  return api;
}
