/**
 * vm-api `create`, in process against the real database: the project it answers and stores (a
 * generated id, the caller as owner, the defaults, the activity and the provision operation), the
 * reconciler making it active once its VM has booted, the 400 naming the field of a malformed
 * request, the 401 of a caller without a valid token and the 403 of one outside the organization
 * (nothing created), and the ACTIVE_PROJECT_LIMIT, concurrent creates included; the repository
 * (contract §10): kept and answered by status, refused with a credential in it (never echoed) or,
 * where ALLOW_LOCAL_REPOSITORY_URLS is off, as a local path.
 */
import assert from "node:assert/strict";
import { isUuid } from "../../_shared/uuid.ts";
import { inProcess } from "../../../../tests/helpers/in_process.ts";
import {
  createOrganization,
  createProject,
  createUser,
} from "../../../../tests/helpers/fixtures.ts";
import {
  ACTION_ENV,
  activityRows,
  countActivity,
  invalidAuthorizations,
  ok,
  operations,
  reconcileUntil,
  refused,
  type Transition,
  vmApi,
} from "../../../../tests/helpers/vm_api.ts";
import type postgres from "postgres";

const projectsOf = async (sql: postgres.Sql, organizationId: string) =>
  (await sql<[{ count: number }]>`
    select count(*)::int as count from public.projects where organization_id = ${organizationId}`)[
    0
  ]
    .count;

Deno.test("create makes a project in an organization of the caller's", async (t) => {
  await using stack = await inProcess(ACTION_ENV);
  const { sql } = stack.db;
  const api = vmApi(stack);
  const user = await createUser(sql);
  const org = await createOrganization(sql, [user]);
  let projectId = "";

  await t.step("create answers provisioning with a generated UUID", async () => {
    const data = ok<Transition>(await api.create(user, org, { name: "Lifecycle" }));
    assert.deepEqual(Object.keys(data).sort(), ["project_id", "status"]);
    assert.equal(data.status, "provisioning");
    assert.ok(isUuid(data.project_id), data.project_id);
    projectId = data.project_id;

    const [row] = await sql<{ organization_id: string; name: string; status: string }[]>`
      select organization_id, name, status from public.projects where id = ${projectId}`;
    assert.ok(row, "the project row exists under the returned id");
    assert.deepEqual({ ...row }, {
      organization_id: org,
      name: "Lifecycle",
      status: "provisioning",
    });
    assert.deepEqual(await activityRows(sql, projectId, "vm_create_requested"), [
      { details: { name: "Lifecycle", region: "australiaeast", vm_size: "Standard_D2s_v3" } },
    ]);
    const ops = await operations(sql, projectId);
    assert.deepEqual(ops.map((o) => [o.kind, o.force]), [["provision", false]]);
  });

  await t.step("the creator is the project's owner", async () => {
    const members = await sql<{ user_id: string; role: string }[]>`
      select user_id, role from public.project_members where project_id = ${projectId}`;
    assert.deepEqual(members.map((m) => ({ user_id: m.user_id, role: m.role })), [
      { user_id: user, role: "owner" },
    ]);
  });

  await t.step("a new project is initializing with the default region and size", async () => {
    // No reconciler has run: the project is still provisioning.
    const { project } = await api.status(user, projectId);
    assert.equal(project.id, projectId);
    assert.equal(project.organization_id, org);
    assert.equal(project.name, "Lifecycle");
    assert.equal(project.status, "provisioning");
    assert.equal(project.health_status, "initializing");
    assert.equal(project.region, "australiaeast");
    assert.equal(project.vm_size, "Standard_D2s_v3");
    assert.equal(project.stuck, false);
  });

  await t.step("create keeps a given region and vm_size", async () => {
    const data = ok<Transition>(
      await api.create(user, org, { name: "Sized", region: "westeurope", vm_size: "Standard_B2s" }),
    );
    assert.notEqual(data.project_id, projectId, "every create gets a new id");
    const { project } = await api.status(user, data.project_id);
    assert.equal(project.region, "westeurope");
    assert.equal(project.vm_size, "Standard_B2s");
  });

  await t.step("the reconciler makes it active once the VM has booted", async () => {
    await reconcileUntil(stack, projectId, "active");
    assert.equal((await api.status(user, projectId)).project.status, "active");
    assert.equal(await countActivity(sql, projectId, "vm_ready"), 1);
    const [{ vms }] = await sql<[{ vms: number }]>`
      select count(*)::int as vms from local_compute.vms where project_id = ${projectId}`;
    assert.equal(vms, 1, "one VM was provisioned");
    assert.deepEqual((await operations(sql, projectId)).map((o) => [o.kind, o.state]), [
      ["provision", "succeeded"],
    ]);
  });

  await t.step("the limits themselves are accepted (a name of 100 characters)", async () => {
    const data = ok<Transition>(await api.create(user, org, { name: "n".repeat(100) }));
    const [row] = await sql<[{ name: string }]>`
      select name from public.projects where id = ${data.project_id}`;
    assert.equal(row.name, "n".repeat(100));
  });

  await t.step("without ACTIVE_PROJECT_LIMIT there is no active-project limit", async () => {
    const otherOrg = await createOrganization(sql, [user], "Unlimited");
    for (let i = 0; i < 4; i++) {
      ok<Transition>(await api.create(user, otherOrg, { name: `Unlimited ${i}` }));
    }
    const [{ running }] = await sql<[{ running: number }]>`
      select count(*)::int as running from public.projects
      where organization_id = ${otherOrg} and status <> 'stopped'`;
    assert.equal(running, 4);
  });

  // The 400s are sent for an organization of their own, to see that they create nothing there.
  const refusalOrg = await createOrganization(sql, [user], "Refusals");

  const cases: [string, Record<string, unknown>, string][] = [
    ["create without organization_id", { name: "x" }, "organization_id"],
    [
      "create with organization_id not a UUID",
      { organization_id: "not-a-uuid", name: "x" },
      "organization_id",
    ],
    ["create without name", { organization_id: refusalOrg }, "name"],
    ["create with an empty name", { organization_id: refusalOrg, name: "" }, "name"],
    ["create with a blank name", { organization_id: refusalOrg, name: "   " }, "name"],
    [
      "create with a name of 101 characters",
      { organization_id: refusalOrg, name: "n".repeat(101) },
      "name",
    ],
    [
      "create with a region with bad characters",
      { organization_id: refusalOrg, name: "x", region: "australia east; drop" },
      "region",
    ],
    [
      "create with vm_size not a string",
      { organization_id: refusalOrg, name: "x", vm_size: 2 },
      "vm_size",
    ],
  ];
  for (const [name, fields, field] of cases) {
    await t.step(`${name} is 400 naming ${field}`, async () => {
      const message = refused(await api.call(user, { action: "create", ...fields }), 400);
      assert.match(message, new RegExp(`^${field}: `));
    });
  }

  await t.step("a field of the wrong type is reported as such, not as missing", async () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ organization_id: refusalOrg, name: "x", vm_size: 2 }, /^vm_size: must be a string$/],
      [{ organization_id: refusalOrg, name: 5 }, /^name: must be a string$/],
      [{ organization_id: 7, name: "x" }, /^organization_id: must be a UUID string$/],
    ];
    for (const [fields, message] of cases) {
      assert.match(refused(await api.call(user, { action: "create", ...fields }), 400), message);
    }
  });

  await t.step("a name containing a NUL character is 400 naming name, not 500", async () => {
    const answer = await api.create(user, refusalOrg, { name: "evil\u0000name" });
    assert.match(refused(answer, 400), /\bname\b/);
  });

  await t.step("nothing was created by the refused requests", async () => {
    assert.equal(await projectsOf(sql, refusalOrg), 0);
  });

  // Who may create where: alice in org A, bob in org B only, an outsider nowhere.
  const alice = await createUser(sql); // org A
  const bob = await createUser(sql); // org B only
  const outsider = await createUser(sql); // no organization
  const orgA = await createOrganization(sql, [alice], "A");
  await createOrganization(sql, [bob], "B");
  // A member of a project of org A who is not a member of org A itself.
  const projectMember = await createUser(sql);
  await createProject(sql, orgA, [projectMember]);

  await t.step("without a valid token: 401, and nothing is created", async () => {
    for (const [name, authorization] of await invalidAuthorizations(alice)) {
      const answer = await api.call(alice, {
        action: "create",
        organization_id: orgA,
        name: "anonymous",
      }, { authorization });
      assert.equal(answer.status, 401, name);
      refused(answer, 401);
    }
    assert.equal(await projectsOf(sql, orgA), 1, "only the fixture's project");
  });

  await t.step("a user outside the organization cannot create in it", async () => {
    for (const caller of [outsider, bob, projectMember]) {
      const answer = await api.create(caller, orgA, { name: "sneaky" });
      assert.equal(refused(answer, 403), "You are not a member of this organization");
    }
    const [{ count }] = await sql<[{ count: number }]>`
      select count(*)::int as count from public.projects where name = 'sneaky'`;
    assert.equal(count, 0);
  });

  await t.step("an organization that does not exist is the same 403", async () => {
    const answer = await api.create(alice, crypto.randomUUID(), { name: "nowhere" });
    assert.equal(refused(answer, 403), "You are not a member of this organization");
  });

  await t.step("a member does get through (the refusals are not an outage)", async () => {
    assert.equal(
      ok<Transition>(await api.create(alice, orgA, { name: "alice's" })).status,
      "provisioning",
    );
    assert.equal(await projectsOf(sql, orgA), 2);
  });

  await t.step(
    "with ACTIVE_PROJECT_LIMIT, an organization's projects that are not stopped count",
    async (t) => {
      // The functions with other settings on this test's database, as a second server would be.
      await using limited = await inProcess({ ...ACTION_ENV, ACTIVE_PROJECT_LIMIT: "2" }, {
        db: stack.db,
      });
      const { sql } = limited.db;
      const api = vmApi(limited);
      const users = await Promise.all(Array.from({ length: 5 }, () => createUser(sql)));
      const [user] = users as [string];
      const org = await createOrganization(sql, [user]);
      const ids: string[] = [];

      await t.step("a create beyond the limit is 400 and creates nothing", async () => {
        for (const name of ["First", "Second"]) {
          ids.push(ok<Transition>(await api.create(user, org, { name })).project_id);
        }
        const message = refused(await api.create(user, org, { name: "Third" }), 400);
        assert.equal(
          message,
          "Active project limit reached: this organization already has 2 of 2 allowed projects " +
            "running. Stop a project first.",
        );
        assert.equal(await projectsOf(sql, org), 2);
      });

      await t.step("the limit is per organization", async () => {
        const otherOrg = await createOrganization(sql, [user], "Other");
        ok<Transition>(await api.create(user, otherOrg, { name: "Elsewhere" }));
      });

      await t.step("a stopped project does not count", async () => {
        const [first] = ids as [string];
        await reconcileUntil(limited, first, "active");
        ok<Transition>(await api.act(user, "stop", first));
        // Stopping still counts: only stopped frees a place.
        refused(await api.create(user, org, { name: "Third" }), 400);
        await reconcileUntil(limited, first, "stopped");
        ok<Transition>(await api.create(user, org, { name: "Third" }));
        assert.equal(await projectsOf(sql, org), 3);
      });

      await t.step("five simultaneous creates with ACTIVE_PROJECT_LIMIT=2: two win", async () => {
        const emptyOrg = await createOrganization(sql, users, "Empty");
        const answers = await Promise.all(
          users.map((u, i) => api.create(u, emptyOrg, { name: `Race ${i}` })),
        );
        assert.deepEqual(answers.map((a) => a.status).sort(), [200, 200, 400, 400, 400]);
        for (const answer of answers) {
          if (answer.status === 200) assert.equal(ok<Transition>(answer).status, "provisioning");
          else assert.match(refused(answer, 400), /limit/i);
        }
        assert.equal(await projectsOf(sql, emptyOrg), 2);
      });
    },
  );
});

Deno.test("create takes the project's repository and branch (contract §10)", async (t) => {
  await using stack = await inProcess(ACTION_ENV);
  const { sql } = stack.db;
  const api = vmApi(stack);
  const user = await createUser(sql);
  const org = await createOrganization(sql, [user]);

  await t.step("repository_url and repository_branch are kept; status answers them", async () => {
    const { project_id } = ok<Transition>(
      await api.create(user, org, {
        name: "With repository",
        repository_url: "https://github.com/acme/app.git",
        repository_branch: "develop",
      }),
    );
    const { project } = await api.status(user, project_id);
    assert.equal(project.repository_url, "https://github.com/acme/app.git");
    assert.equal(project.repository_branch, "develop");
    assert.deepEqual(await activityRows(sql, project_id, "vm_create_requested"), [{
      details: {
        name: "With repository",
        region: "australiaeast",
        vm_size: "Standard_D2s_v3",
        repository_url: "https://github.com/acme/app.git",
        repository_branch: "develop",
      },
    }]);
  });

  await t.step("the branch defaults to main; SSH URLs and null are taken", async () => {
    for (const url of ["git@github.com:acme/app.git", "ssh://git@github.com/acme/app.git", null]) {
      const { project_id } = ok<Transition>(
        await api.create(user, org, { name: "SSH", repository_url: url }),
      );
      const { project } = await api.status(user, project_id);
      assert.equal(project.repository_url, url);
      assert.equal(project.repository_branch, "main");
    }
  });

  await t.step("the local stack takes file:// URLs and absolute paths", async () => {
    for (const url of ["file:///srv/repos/app", "/srv/repos/app"]) {
      const { project_id } = ok<Transition>(
        await api.create(user, org, { name: "Local", repository_url: url }),
      );
      assert.equal((await api.status(user, project_id)).project.repository_url, url);
    }
  });

  const before = await projectsOf(sql, org);

  await t.step(
    "a URL with a credential is 400, says to use GIT_TOKEN, never echoes it",
    async () => {
      for (
        const url of [
          "https://alice:ghp_SeCrEt123@github.com/acme/app.git",
          "https://ghp_SeCrEt123@github.com/acme/app.git",
          "ssh://git:ghp_SeCrEt123@github.com/acme/app.git",
          "alice:ghp_SeCrEt123@github.com:acme/app.git",
        ]
      ) {
        const answer = await api.create(user, org, { name: "Leaky", repository_url: url });
        assert.equal(
          refused(answer, 400, "invalid_request"),
          "repository_url: must not carry a credential: store the token as the project secret " +
            "GIT_TOKEN instead",
        );
        assert.ok(!answer.text.includes("ghp_SeCrEt123"), answer.text);
      }
      assert.ok(!stack.output().includes("ghp_SeCrEt123"), "the credential is in no log line");
    },
  );

  await t.step("a URL git cannot clone, or a bad branch, is 400 naming the field", async () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ repository_url: "http://github.com/acme/app.git" }, /^repository_url: must be a/],
      [{ repository_url: "relative/path" }, /^repository_url: must be a/],
      [{ repository_url: "" }, /^repository_url: must not be empty$/],
      [{ repository_url: 7 }, /^repository_url: must be a string$/],
      [{ repository_branch: "--upload-pack=x" }, /^repository_branch: must be a branch name/],
      [{ repository_branch: "a..b" }, /^repository_branch: must be a branch name/],
    ];
    for (const [fields, message] of cases) {
      assert.match(refused(await api.create(user, org, { name: "Bad", ...fields }), 400), message);
    }
  });

  await t.step("with ALLOW_LOCAL_REPOSITORY_URLS=false, local paths are 400", async () => {
    await using hosted = await inProcess({ ...ACTION_ENV, ALLOW_LOCAL_REPOSITORY_URLS: "false" }, {
      db: stack.db,
    });
    const strict = vmApi(hosted);
    for (const url of ["file:///srv/repos/app", "/srv/repos/app"]) {
      assert.equal(
        refused(await strict.create(user, org, { name: "Local", repository_url: url }), 400),
        "repository_url: must be an https or SSH URL: file:// URLs and local paths are for the " +
          "local stack only",
      );
    }
    ok<Transition>(
      await strict.create(user, org, { repository_url: "https://github.com/acme/app.git" }),
    );
  });

  await t.step("nothing was created by the refused requests", async () => {
    assert.equal(await projectsOf(sql, org), before + 1, "only the last, accepted one");
  });
});
