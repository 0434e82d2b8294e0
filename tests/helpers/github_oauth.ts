/**
 * Connect GitHub as a person does it (contract §18): vm-api `github_authorize`, the button
 * "Authorize as <login>" on the GitHub stand-in's authorize page, and GitHub's redirect to the
 * platform's github-oauth callback. Answers the callback's response and the state it carried.
 */
import assert from "node:assert/strict";
import type { Endpoint } from "./endpoint.ts";
import { vmApi } from "./vm_api.ts";

export async function connectThroughOAuth(
  endpoint: Endpoint,
  userId: string,
  login: string,
): Promise<{ response: Response; callback: URL; state: string }> {
  const authorize = await vmApi(endpoint).call(userId, { action: "github_authorize" });
  assert.equal(authorize.status, 200, authorize.text);
  const page = new URL(String((authorize.body.data as { url: string }).url));
  const state = page.searchParams.get("state")!;
  const chose = await fetch(page.origin + page.pathname, {
    method: "POST",
    body: new URLSearchParams({
      client_id: page.searchParams.get("client_id")!,
      redirect_uri: page.searchParams.get("redirect_uri")!,
      state,
      login,
    }),
    redirect: "manual",
  });
  assert.equal(chose.status, 302);
  await chose.body?.cancel();
  const callback = new URL(chose.headers.get("location")!);
  const response = await endpoint.fetch(
    // The 303 to the dashboard is the answer: not followed.
    new Request(`${endpoint.functionUrl("github-oauth")}${callback.search}`, {
      redirect: "manual",
    }),
  );
  return { response, callback, state };
}
