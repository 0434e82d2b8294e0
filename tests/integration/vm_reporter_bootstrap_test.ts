import assert from "node:assert/strict";
import { newBootstrapCredential } from "../../supabase/functions/_shared/reporter_token.ts";
import { createTestDatabase } from "../helpers/database.ts";
import { startServer } from "../helpers/server.ts";
import { eventually } from "../helpers/vm_api.ts";
import { assertError, reporter, setupProject } from "../helpers/vm_reporter.ts";
import type postgres from "postgres";

async function issueCredential(sql: postgres.Sql, projectId: string, ttl = "1 hour") {
  const credential = await newBootstrapCredential();
  await sql`
    select private.issue_bootstrap_credential(${projectId}, ${credential.hash}, ${ttl}::interval)`;
  return credential.plaintext;
}

Deno.test("vm-reporter /bootstrap exchanges a single-use boot credential for a token", async (t) => {
  await using db = await createTestDatabase();
  await using server = await startServer(db.url, { VM_REPORTER_UNAUTHENTICATED_LIMIT: "6" });
  const { projectId, token: oldToken } = await setupProject(db.sql);
  const other = await setupProject(db.sql);
  const credential = await issueCredential(db.sql, projectId);
  const vm = reporter(server, projectId, credential);
  let reporterToken = "";

  await t.step("the credential buys a working reporter token, shown once", async () => {
    const data = await vm.ok("/bootstrap");
    assert.equal(data.project_id, projectId);
    assert.match(data.reporter_token, /^vmr_[A-Za-z0-9_-]{43}$/);
    reporterToken = data.reporter_token;
    const health = await vm.post("/health", {
      cpu_percent: 1,
      memory_percent: 1,
      disk_percent: 1,
      agents: [],
    }, { token: reporterToken });
    assert.equal(health.status, 200, health.text);
  });

  await t.step("an operator's token outlives the VM's first contact", async () => {
    const poll = await vm.post("/commands/poll", {}, { token: oldToken });
    assert.equal(poll.status, 200, poll.text);
  });

  await t.step("a re-provisioned VM's exchange ends the tokens earlier VMs received", async () => {
    const again = await issueCredential(db.sql, projectId);
    const exchanged = await vm.post("/bootstrap", {}, { token: again });
    assert.equal(exchanged.status, 200, exchanged.text);
    const newer: string = exchanged.body.data.reporter_token;
    assertError(await vm.post("/commands/poll", {}, { token: reporterToken }), 401);
    assert.equal((await vm.post("/commands/poll", {}, { token: newer })).status, 200);
    assert.equal((await vm.post("/commands/poll", {}, { token: oldToken })).status, 200);
    reporterToken = newer;
  });

  await t.step("the same credential a second time is refused", async () => {
    assertError(await vm.post("/bootstrap"), 401, "Missing, used or expired bootstrap credential");
  });

  await t.step("a credential is refused for another project, expired, or superseded", async () => {
    const foreign = await issueCredential(db.sql, other.projectId);
    assertError(await vm.post("/bootstrap", {}, { token: foreign }), 401);
    const expired = await issueCredential(db.sql, projectId, "0 seconds");
    assertError(await vm.post("/bootstrap", {}, { token: expired }), 401);
    const older = await issueCredential(db.sql, projectId);
    const newer = await issueCredential(db.sql, projectId);
    assertError(await vm.post("/bootstrap", {}, { token: older }), 401);
    assert.equal((await vm.post("/bootstrap", {}, { token: newer })).status, 200);
  });

  await t.step("a reporter token is not a bootstrap credential, nor the reverse", async () => {
    assertError(await vm.post("/bootstrap", {}, { token: reporterToken }), 401);
    const unused = await issueCredential(db.sql, projectId);
    assertError(await vm.post("/health", {}, { token: unused }), 401);
  });

  await t.step("failed exchanges spend the unauthenticated budget", async () => {
    let last = 0;
    for (let i = 0; i < 4 && last !== 429; i++) {
      last = (await vm.post("/bootstrap", {}, { token: credential })).status;
    }
    assert.equal(last, 429);
  });

  await t.step("exchanges are logged like every request, without any secret", async () => {
    const rows = await eventually(async () => {
      const logged = await db.sql<{ status_code: number }[]>`
        select status_code from public.vm_reporter_request_log
        where route = '/bootstrap' and project_id = ${projectId}`;
      return logged.length >= 8 ? logged : undefined;
    });
    assert.ok(rows.some((r) => r.status_code === 200) && rows.some((r) => r.status_code === 401));
    assert.doesNotMatch(server.output(), /vm[rb]_[A-Za-z0-9_-]{43}/);
    const [{ leaks }] = await db.sql<[{ leaks: number }]>`
      select count(*)::int as leaks from public.vm_reporter_request_log
      where error_message ~ 'vm[rb]_'`;
    assert.equal(leaks, 0);
  });
});
