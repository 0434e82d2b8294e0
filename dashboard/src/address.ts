/**
 * The dashboard's addresses: what is shown lives in the URL's hash, so a reload, Back and a link
 * (an approval in an email) land on the same place.
 *
 *   #/<org>                               the organization (no project chosen)
 *   #/<org>/needs-you                     Needs You
 *   #/<org>/webhooks                      Webhooks
 *   #/<org>/notifications                 the user's email notifications (contract §13)
 *   #/<org>/projects/<project>/<area>     a project's area (area in lower case: overview, ...)
 *   #/<org>/projects/<project>/approvals/<approval>   one approval
 */
export const AREAS = [
  "Overview",
  "Agents",
  "Reports",
  "Logs",
  "Chat",
  "Approvals",
  "Config",
  "Costs",
  "Settings",
] as const;
export type AreaName = (typeof AREAS)[number];

export type Place =
  | { view: "organization"; org?: string }
  | { view: "needs-you"; org: string }
  | { view: "webhooks"; org: string }
  | { view: "notifications"; org: string }
  | { view: "project"; org: string; project: string; area: AreaName; approval?: string };

const ID = /^[0-9a-f-]{36}$/i;

export function parsePlace(hash: string): Place {
  const parts = hash.replace(/^#\/?/, "").split("/").filter(Boolean).map(decodeURIComponent);
  const [org, section, project, areaSlug, approval] = parts;
  if (!org || !ID.test(org)) return { view: "organization" };
  if (section === "needs-you") return { view: "needs-you", org };
  if (section === "webhooks") return { view: "webhooks", org };
  if (section === "notifications") return { view: "notifications", org };
  if (section === "projects" && project && ID.test(project)) {
    const area = AREAS.find((a) => a.toLowerCase() === (areaSlug ?? "overview")) ?? "Overview";
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
      return `#/${place.org}/projects/${place.project}/${place.area.toLowerCase()}` +
        (place.approval ? `/${place.approval}` : "");
  }
}
