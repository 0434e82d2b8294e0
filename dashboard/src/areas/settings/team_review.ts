/**
 * Settings' team review (contract §21): how many times the team's reviewer reviews a pull
 * request before people are asked (0: never), and which GitHub logins are then asked to review,
 * as a person reads them and as owners and admins change them (vm-api `update`).
 */
import type { AreaContext } from "../../area.ts";
import { type TeamReviewSettings, updateProject } from "../../data.ts";
import { type Child, h, show, showChanged } from "../../ui.ts";

/** The team review settings as a person reads them. */
export function teamReviewView(row: TeamReviewSettings): Child[] {
  return [
    h(
      "dl",
      {},
      h("dt", {}, "Team review"),
      h(
        "dd",
        {},
        row.review_rounds === 0
          ? "Off: pull requests go straight to people"
          : `Up to ${row.review_rounds} round${row.review_rounds === 1 ? "" : "s"} by the ` +
            "team's reviewer before people are asked",
      ),
      h("dt", {}, "Reviewers asked then"),
      h(
        "dd",
        {},
        row.reviewers.length ? row.reviewers.map((login) => `@${login}`).join(", ") : "None",
      ),
    ),
  ];
}

/** The logins typed, separated by commas or spaces, without a leading @. */
export function parseReviewers(text: string): string[] {
  return text.split(/[\s,]+/).map((login) => login.replace(/^@/, "")).filter(Boolean);
}

/** The team review section; `refresh` reads the whole page again after a save. */
export function teamReviewSettings(context: AreaContext, refresh: () => Promise<void>) {
  const { client } = context;
  const project = context.project!;
  const current = h("div", { class: "team-review-current", "aria-live": "polite" });
  const rounds = h("input", {
    id: "review-rounds",
    type: "number",
    min: 0,
    max: 10,
    step: 1,
    required: true,
    "aria-describedby": "review-rounds-hint",
  });
  const reviewers = h("input", {
    id: "reviewers",
    type: "text",
    autocomplete: "off",
    spellcheck: "false",
    placeholder: "octocat, hubot",
    "aria-describedby": "reviewers-hint",
  });
  const save = h("button", { type: "submit" }, "Save team review");
  function fill(row: TeamReviewSettings): void {
    rounds.value = String(row.review_rounds);
    reviewers.value = row.reviewers.join(", ");
  }
  const form = h(
    "form",
    {
      class: "settings-form",
      "aria-label": "Team review",
      onsubmit: async (event: Event) => {
        event.preventDefault();
        save.disabled = true;
        try {
          const { project: saved } = await updateProject(client, {
            project_id: project.id,
            review_rounds: Number(rounds.value),
            reviewers: parseReviewers(reviewers.value),
          });
          fill(saved);
          context.say(
            saved.review_rounds === 0
              ? "Team review saved: off."
              : `Team review saved: up to ${saved.review_rounds} rounds.`,
          );
          await refresh();
        } catch (error) {
          context.fail(error);
        } finally {
          save.disabled = false;
        }
      },
    },
    h("label", { for: "review-rounds" }, "Review rounds"),
    rounds,
    h(
      "p",
      { class: "hint", id: "review-rounds-hint" },
      "Pull requests open as drafts and the team's reviewer reviews each push, at most this " +
        "many times; the author answers its requested changes. 0 turns it off.",
    ),
    h("label", { for: "reviewers" }, "Reviewers (GitHub logins)"),
    reviewers,
    h(
      "p",
      { class: "hint", id: "reviewers-hint" },
      "Asked to review once the team approved or ran out of rounds; at most 15, separated by " +
        "commas.",
    ),
    save,
  );
  const section = h("section", { "aria-labelledby": "team-review-heading" });
  let filled = false;
  return {
    section,
    render(admin: boolean): void {
      show(
        section,
        h("h3", { id: "team-review-heading" }, "Team review"),
        h(
          "p",
          { class: "hint" },
          "The team reviews its own pull requests on GitHub before a person is asked.",
        ),
        current,
        admin ? form : null,
      );
    },
    draw(row: TeamReviewSettings | null): void {
      if (!row) return;
      if (!filled) fill(row);
      filled = true;
      showChanged(current, row, () => teamReviewView(row));
    },
  };
}
