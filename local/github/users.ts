/**
 * `GET /user`: the person a user token acts as, as GitHub shows a person themselves (the
 * OpenAPI description's `private-user`: the public profile and the counts only its owner sees).
 */
import type { Context, TokenCall } from "./context.ts";
import { json } from "./responses.ts";
import { simpleUser } from "./shapes.ts";
import { iso } from "./state.ts";

export function getAuthenticatedUser(ctx: Context, call: TokenCall): Response {
  const user = call.actor;
  const owned = [...ctx.state.repos.values()].filter((r) => r.owner === user);
  const privateRepos = owned.filter((r) => r.private).length;
  return json(200, {
    ...simpleUser(ctx.site, user),
    user_view_type: "private",
    name: user.name,
    company: null,
    blog: "",
    location: null,
    email: null,
    notification_email: null,
    hireable: null,
    bio: null,
    twitter_username: null,
    public_repos: owned.length - privateRepos,
    public_gists: 0,
    followers: 0,
    following: 0,
    created_at: iso(user.createdAt),
    updated_at: iso(user.createdAt),
    private_gists: 0,
    total_private_repos: privateRepos,
    owned_private_repos: privateRepos,
    disk_usage: 0,
    collaborators: 0,
    two_factor_authentication: false,
    plan: { name: "free", space: 976562499, collaborators: 0, private_repos: 10000 },
  });
}
