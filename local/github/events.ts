/**
 * What the App hears: a webhook payload for something that happened in a repository or to an
 * installation, with the envelope GitHub puts on every App delivery (`action` first, then the
 * event's own fields, `repository`, `installation: {id, node_id}`, `sender`). An App hears about
 * a repository only while it is installed on it: events elsewhere are not delivered at all.
 */
import { type Account, type Installation, type Repo, type State } from "./state.ts";
import { type AppInfo, installation, nodeId, repository, simpleUser, type Site } from "./shapes.ts";
import type { Webhooks } from "./webhooks.ts";

export interface Events {
  /** An event in a repository (`fields` holds `action` when the event has one). */
  repo(event: string, repo: Repo, sender: Account, fields: Record<string, unknown>): void;
  /** `installation` and `installation_repositories`: about the installation itself. */
  installation(
    event: string,
    inst: Installation,
    sender: Account,
    fields: Record<string, unknown>,
  ): void;
}

export function createEvents(site: Site, state: State, app: AppInfo, webhooks: Webhooks): Events {
  return {
    repo(event, repo, sender, fields) {
      const inst = state.installationOf(repo);
      if (!inst) return;
      webhooks.emit(event, {
        ...fields,
        repository: repository(site, repo),
        installation: { id: inst.id, node_id: nodeId("MDIz", inst.id) },
        sender: simpleUser(site, sender),
      });
    },
    installation(event, inst, sender, fields) {
      webhooks.emit(event, {
        ...fields,
        installation: installation(site, app, inst),
        sender: simpleUser(site, sender),
      });
    },
  };
}
