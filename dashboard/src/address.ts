/**
 * The dashboard's addresses: what is shown lives in the URL's hash, so a reload, Back and a link
 * (an approval in an email) land on the same place.
 *
 *   #/<org>                               the organization (no project chosen)
 *   #/<org>/needs-you                     Needs You
 *   #/<org>/webhooks                      Webhooks
 *   #/<org>/notifications                 the user's email notifications (contract §13)
 *   #/<org>/projects/<project>/<area>     a project's area (lower case, - for a space: overview,
 *                                         pull-requests, ...)
 *   #/<org>/projects/<project>/approvals/<approval>   one approval
 */
export const AREAS = [
  "Overview",
  "Agents",
  "Pull requests",
  "Reports",
  "Logs",
  "Chat",
  "Approvals",
  "Config",
  "Costs",
  "Settings",
] as const;
export type AreaName = (typeof AREAS)[number];

/** An area as its address names it: lower case, a hyphen for a space (`pull-requests`). */
export const areaSlug = (area: AreaName) => area.toLowerCase().replaceAll(" ", "-");

export type Place =
  | { view: "organization"; org?: string }
  | { view: "needs-you"; org: string }
  | { view: "webhooks"; org: string }
  | { view: "notifications"; org: string }
  | { view: "project"; org: string; project: string; area: AreaName; approval?: string };

const ID = /^[0-9a-f-]{36}$/i;

export function parsePlace(hash: string): Place {
  const parts = hash.replace(/^#\/?/, "").split("/").filter(Boolean).map(decodeURIComponent);
  const [org, section, project, slug, approval] = parts;
  if (!org || !ID.test(org)) return { view: "organization" };
  if (section === "needs-you") return { view: "needs-you", org };
  if (section === "webhooks") return { view: "webhooks", org };
  if (section === "notifications") return { view: "notifications", org };
  if (section === "projects" && project && ID.test(project)) {
    const area = AREAS.find((a) => areaSlug(a) === (slug ?? "overview")) ?? "Overview";
    return {
      view: "project",
      org,
      project,
      area,
      ...(area === "Approvals" && approval && ID.test(approval) ? { approval } : {}),
    };
  }
  return { view: "organization", org };
}

export function formatPlace(place: Place): string {
  switch (place.view) {
    case "organization":
      return place.org ? `#/${place.org}` : "#/";
    case "needs-you":
    case "webhooks":
    case "notifications":
      return `#/${place.org}/${place.view}`;
    case "project":
      return `#/${place.org}/projects/${place.project}/${areaSlug(place.area)}` +
        (place.approval ? `/${place.approval}` : "");
  }
}
