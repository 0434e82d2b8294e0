/**
 * Settings: the project's facts; its repository and its secrets (contract §10) and its cost
 * control (contract §12: idle stop, schedule in a named time zone, monthly budget), which owners
 * and admins change (vm-api `update`, `set_secret`, `delete_secret`) and members read (the project
 * row, the `project_secrets` read model: names and times, never a value); GitHub (contract §16: the
 * App's connection, the delivery by pull request or push and its settings; §18: the person's GitHub
 * account and who proved push access to the repository); the environment (contract §20: system
 * packages and the check command); and deleting the project
 * (forced while its VM runs) after typing its name. Each section is a module of settings/; this
 * one lays them out, reads their rows and decides who gets the controls.
 */
import type { MountArea } from "../area.ts";
import {
  projectCostControl,
  projectDeliverySettings,
  projectEnvironmentSettings,
  projectRepository,
  projectRole,
  projectSecrets,
  projectTeamReview,
} from "../data.ts";
import { h, show } from "../ui.ts";
import { costControlSettings } from "./settings/cost_control.ts";
import { dangerZone } from "./settings/danger_zone.ts";
import { environmentSettings } from "./settings/environment.ts";
import { githubSettings } from "./settings/github.ts";
import { repositorySettings } from "./settings/repository.ts";
import { secretSettings } from "./settings/secrets.ts";
import { teamReviewSettings } from "./settings/team_review.ts";

export { costControlView } from "./settings/cost_control.ts";
export { environmentSettings, packageNames } from "./settings/environment.ts";
export { connectionView, deliveryView, githubSettings } from "./settings/github.ts";
export { parseReviewers, teamReviewView } from "./settings/team_review.ts";

const ADMIN_ROLES = ["owner", "admin"];

export const mountSettings: MountArea = (root, context) => {
  const { client } = context;
  const project = context.project!;
  // What the server decides (is_project_admin): an owner or admin of the project, or a member of
  // it who owns or administers its organization. Members see the same, without the controls.
  let admin = ADMIN_ROLES.includes(context.membership.role);

  const refresh = () => area.refresh();
  /** The repository was just saved: the same one too is checked again (push access, §18). */
  let saved = false;
  const repository = repositorySettings(context, () => {
    saved = true;
    return refresh();
  });
  const secrets = secretSettings(context, refresh);
  const costControl = costControlSettings(context, refresh);
  const github = githubSettings(context, refresh);
  const teamReview = teamReviewSettings(context, refresh);
  const environment = environmentSettings(context, refresh);

  function renderControls(): void {
    repository.render(admin);
    secrets.render(admin);
    costControl.render(admin);
    github.render(admin);
    teamReview.render(admin);
    environment.render(admin);
  }

  show(
    root,
    h("h2", {}, "Settings"),
    h(
      "dl",
      {},
      h("dt", {}, "Project id"),
      h("dd", {}, h("code", {}, project.id)),
      h("dt", {}, "Region"),
      h("dd", {}, project.region),
      h("dt", {}, "VM size"),
      h("dd", {}, project.vm_size),
    ),
    repository.section,
    secrets.section,
    costControl.section,
    github.section,
    teamReview.section,
    environment.section,
    dangerZone(context),
  );
  renderControls();
  // The connection is vm-api's to say (status), asked once here rather than on every tick.
  void github.check();

  let shownRepository: string | null | undefined;
  const area = {
    async refresh() {
      const [repositoryRow, secretRows, costs, delivery, environmentRow, review] = await Promise
        .all([
          projectRepository(client, project.id),
          projectSecrets(client, project.id),
          projectCostControl(client, project.id),
          projectDeliverySettings(client, project.id),
          projectEnvironmentSettings(client, project.id),
          projectTeamReview(client, project.id),
        ]);
      github.draw(delivery);
      teamReview.draw(review);
      // Another repository may be another connection (on GitHub or not), and a saved one may be
      // verified now: status says again, once.
      const repositoryUrl = repositoryRow?.repository_url ?? null;
      const changed = shownRepository !== undefined && repositoryUrl !== shownRepository;
      if (changed || saved) void github.check();
      shownRepository = repositoryUrl;
      saved = false;
      costControl.draw(costs);
      repository.draw(repositoryRow);
      secrets.draw(secretRows, admin);
      environment.draw(environmentRow);
    },
  };

  // Whether this user may change them: the organization's role is known, the project's is read.
  if (!admin) {
    void projectRole(client, project.id, context.userId).then((role) => {
      if (role && ADMIN_ROLES.includes(role)) {
        admin = true;
        renderControls();
        // The connection is vm-api's to say (status), asked once here rather than on every tick.
        void github.check();
        secrets.list.dataset.shown = "";
        return area.refresh();
      }
    }).catch(context.fail);
  }
  return area;
};
