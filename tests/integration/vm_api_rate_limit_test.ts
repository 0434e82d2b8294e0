/**
 * vm-api's rate limit across processes: two real servers (scripts/start.ts) on one database share
 * each user's budget, because it is counted in PostgreSQL. The rest of the request path (method,
 * CORS, JWT, rate limit in one process, body, errors) is tested in process in
 * supabase/functions/vm-api/handler_test.ts, and each action beside it in actions/.
 */
import assert from "node:assert/strict";
import { createTestDatabase } from "../helpers/database.ts";
import { createOrganization, createProject, createUser } from "../helpers/fixtures.ts";
import { startServer } from "../helpers/server.ts";
import { RATE_LIMITED_BODY, token, vmApi } from "../helpers/vm_api.ts";

Deno.test("vm-api allows each user VM_API_RATE_LIMIT requests a minute, across processes", async (t) => {
  await using db = await createTestDatabase();
  await using server = await startServer(db.url);
  const roamer = await createUser(db.sql);
  const org = await createOrganization(db.sql, [roamer]);
  const project = await createProject(db.sql, org, [roamer]);

  await t.step("two processes on one database share the budget: exactly 20 pass", async () => {
    await using second = await startServer(db.url);
    const jwt = await token(roamer);
    const servers = [vmApi(server), vmApi(second)];
    const answers = await Promise.all(
      Array.from(
        { length: 30 },
        (_, i) =>
          servers[i % 2]!.act(roamer, "status", project, {}, { authorization: `Bearer ${jwt}` }),
      ),
    );
    const count = (status: number, of = answers) => of.filter((a) => a.status === status).length;
    assert.equal(count(200), 20, answers.map((a) => a.status).join(","));
    assert.equal(count(429), 10);
    for (const limited of answers.filter((a) => a.status === 429)) {
      assert.deepEqual(limited.body, RATE_LIMITED_BODY);
      assert.match(limited.headers.get("retry-after") ?? "", /^\d+$/);
    }
    // Per process the 15 each got would all have passed: 20 in total means one shared budget.
    assert.ok(count(200, answers.filter((_, i) => i % 2 === 1)) > 0, "second never served");
    for (const output of [server.output(), second.output()]) {
      assert.ok(!output.includes(jwt), "a server log contains the bearer token");
    }
  });
});
