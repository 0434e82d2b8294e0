/**
 * The stand-in's people: `demo-owner` owns the demo repositories, and one person per GitHub base
 * role is a collaborator on each repository of demo-owner (`demo-maintainer`, `demo-writer`,
 * `demo-triager`, `demo-reader`), with `demo-outsider`, who has no access. What a role lets a
 * person do is GitHub's: `permissions` on `GET /repos/{owner}/{repo}` and the legacy
 * `permission` of the collaborator permission endpoint (maintain counts as write, triage as
 * read).
 */
import { hasRole, type Role, type State } from "./state.ts";

export const DEMO_OWNER = "demo-owner";
export const DEMO_MAINTAINER = "demo-maintainer";
export const DEMO_WRITER = "demo-writer";
export const DEMO_TRIAGER = "demo-triager";
export const DEMO_READER = "demo-reader";
export const DEMO_OUTSIDER = "demo-outsider";
/** The person with write access that tests written before the roles existed name. */
export const DEMO_PERSON = DEMO_WRITER;

interface Person {
  login: string;
  name: string;
  /** Their role on each repository of demo-owner; none: no access. */
  role: Role | undefined;
}

const PEOPLE: readonly Person[] = [
  { login: DEMO_OWNER, name: "Demo Owner", role: "admin" },
  { login: DEMO_MAINTAINER, name: "Demo Maintainer", role: "maintain" },
  { login: DEMO_WRITER, name: "Demo Writer", role: "write" },
  { login: DEMO_TRIAGER, name: "Demo Triager", role: "triage" },
  { login: DEMO_READER, name: "Demo Reader", role: "read" },
  { login: DEMO_OUTSIDER, name: "Demo Outsider", role: undefined },
];

/** Makes the people's accounts (demo-owner first); answers demo-owner's. */
export function addPeople(state: State) {
  const accounts = PEOPLE.map((p) => state.account(p.login, { name: p.name }));
  return accounts[0]!;
}

/**
 * Who a new repository of `owner` has as collaborators, by login: for demo-owner's, the demo
 * people with their roles; for anyone else's, nobody.
 */
export function defaultCollaborators(owner: string): Record<string, Role> {
  if (owner.toLowerCase() !== DEMO_OWNER) return {};
  return Object.fromEntries(
    PEOPLE.filter((p) => p.role && p.login !== DEMO_OWNER).map((p) => [p.login, p.role!]),
  );
}

/**
 * The role a person needs to act on a repository they can see, the same on the page and through
 * the REST API with their user token (GitHub's base roles).
 */
export const ROLE_TO: Record<
  "read" | "comment" | "review" | "label" | "open" | "merge",
  Role
> = {
  read: "read",
  comment: "read",
  review: "read",
  label: "triage",
  // A pull request from a branch of the repository itself: its head was pushed by a writer.
  open: "write",
  merge: "write",
};

/** `permissions` of a repository for a person with this role (none: not even pull). */
export function repoPermissions(role: Role | undefined) {
  return {
    admin: hasRole(role, "admin"),
    maintain: hasRole(role, "maintain"),
    push: hasRole(role, "write"),
    triage: hasRole(role, "triage"),
    pull: hasRole(role, "read"),
  };
}

/** The legacy base permission GitHub answers beside `role_name`: maintain→write, triage→read. */
export function legacyPermission(role: Role | undefined): "admin" | "write" | "read" | "none" {
  if (role === undefined) return "none";
  if (role === "maintain") return "write";
  if (role === "triage") return "read";
  return role;
}
