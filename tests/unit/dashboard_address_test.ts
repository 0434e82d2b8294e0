import assert from "node:assert/strict";
import { formatPlace, parsePlace } from "../../dashboard/src/address.ts";
import { Store } from "../../dashboard/src/store.ts";

const ORG = "00000000-0000-4000-8000-0000000000aa";
const PROJECT = "11111111-1111-4111-8111-111111111111";
const APPROVAL = "22222222-2222-4222-8222-222222222222";

Deno.test("parsePlace() and formatPlace() round-trip every kind of address", () => {
  for (
    const hash of [
      `#/${ORG}`,
      `#/${ORG}/needs-you`,
      `#/${ORG}/webhooks`,
      `#/${ORG}/projects/${PROJECT}/overview`,
      `#/${ORG}/projects/${PROJECT}/settings`,
      `#/${ORG}/projects/${PROJECT}/approvals/${APPROVAL}`,
    ]
  ) assert.equal(formatPlace(parsePlace(hash)), hash);
});

Deno.test("parsePlace() reads what it cannot place as the nearest place that exists", () => {
  assert.deepEqual(parsePlace(""), { view: "organization" });
  assert.deepEqual(parsePlace("#/not-an-id"), { view: "organization" });
  assert.deepEqual(parsePlace(`#/${ORG}/projects/${PROJECT}/nowhere`), {
    view: "project",
    org: ORG,
    project: PROJECT,
    area: "Overview",
  });
  assert.deepEqual(parsePlace(`#/${ORG}/projects/${PROJECT}/logs/${APPROVAL}`), {
    view: "project",
    org: ORG,
    project: PROJECT,
    area: "Logs",
  });
  assert.deepEqual(parsePlace(`#/${ORG}/elsewhere`), { view: "organization", org: ORG });
});

Deno.test("the store mirrors the place in the address and tells its listeners", () => {
  const location = { hash: `#/${ORG}/needs-you` };
  const store = new Store(location);
  assert.deepEqual(store.state.place, { view: "needs-you", org: ORG });
  const seen: string[] = [];
  store.subscribe((state) => seen.push(formatPlace(state.place)));
  store.go({ view: "project", org: ORG, project: PROJECT, area: "Chat" });
  assert.equal(location.hash, `#/${ORG}/projects/${PROJECT}/chat`);
  location.hash = `#/${ORG}/webhooks`; // Back
  store.followAddress();
  store.followAddress(); // the same address again changes nothing
  assert.deepEqual(seen, [`#/${ORG}/projects/${PROJECT}/chat`, `#/${ORG}/webhooks`]);
  store.setConnection("live");
  assert.equal(store.state.connection, "live");
  assert.equal(seen.length, 3);
});
