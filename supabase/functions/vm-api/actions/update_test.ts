/**
 * vm-api `update` (contract §10), in process against the real database: an owner or admin renames
 * the project and sets, changes or clears its repository, and gets the project back as `status`
 * answers it; each change that touches the repository moves the manifest's revision and, for a VM
 * that is up, queues one update_manifest {revision}; a plain member is 403 not_project_admin and a
 * non-member 403 not_project_member (nothing changed either way); 400s name the field and never
 * echo a credential; 401 without a valid token.
 */
import assert from "node:assert/strict";
import type postgres from "postgres";
import { inProcess } from "../../../../tests/helpers/in_process.ts";
import {
  createOrganization,
  createProject,
  createUser,
} from "../../../../tests/helpers/fixtures.ts";
import {
  ACTION_ENV,
  activityRows,
  invalidAuthorizations,
  nonMembers,
  NOT_A_MEMBER,
  ok,
  type Project,
  refused,
  settled,
  vmApi,
} from "../../../../tests/helpers/vm_api.ts";

const NOT_AN_ADMIN =
  "Only the project's owners and admins can change its settings, repository and secrets";

async function manifestState(sql: postgres.Sql, projectId: string) {
  const [row] = await sql<[{ revision: number; commands: Record<string, unknown>[] }]>`
    select p.manifest_revision::int as revision,
      coalesce((select jsonb_agg(c.payload order by c.created_at) from public.vm_commands c
                where c.project_id = p.id and c.type = 'update_manifest'), '[]') as commands
    from public.projects p where p.id = ${projectId}`;
  return { revision: row.revision, commands: row.commands };
}

async function addMember(sql: postgres.Sql, projectId: string, userId: string, role: string) {
  await sql`
    insert into public.project_members (project_id, user_id, role)
    values (${projectId}, ${userId}, ${role})`;
}

Deno.test("update changes a project's name and repository, for its owners and admins", async (t) => {
  await using stack = await inProcess(ACTION_ENV);
  const { sql } = stack.db;
  const api = vmApi(stack);
  const owner = await createUser(sql);
  const org = await createOrganization(sql, [owner]);
  const projectId = await createProject(sql, org, [owner], { name: "Before" });
  const update = (userId: string, fields: Record<string, unknown>) =>
    api.act(userId, "update", projectId, fields);

  await t.step(
    "the owner sets the repository; the answer is the project as status has it",
    async () => {
      const { project } = ok<{ project: Project }>(
        await update(owner, {
          name: "After",
          repository_url: "https://github.com/acme/app.git",
          repository_branch: "develop",
        }),
      );
      const status = await api.status(owner, projectId);
      // status adds `github` (contract §16): null on a service without a GitHub App.
      const { github, ...asUpdated } = status.project;
      assert.equal(github, null);
      assert.deepEqual(settled(project), settled(asUpdated));
      assert.equal(project.name, "After");
      assert.equal(project.repository_url, "https://github.com/acme/app.git");
      assert.equal(project.repository_branch, "develop");
      assert.deepEqual(await activityRows(sql, projectId, "project_updated"), [{
        details: {
          name: "After",
          repository_url: "https://github.com/acme/app.git",
          repository_branch: "develop",
        },
      }]);
    },
  );

  await t.step("the repository change moved the revision and queued update_manifest", async () => {
    assert.deepEqual(await manifestState(sql, projectId), {
      revision: 2,
      commands: [{ revision: 2 }],
    });
  });

  await t.step("a rename alone leaves the manifest as it is", async () => {
    ok(await update(owner, { name: "Renamed" }));
    assert.equal((await manifestState(sql, projectId)).revision, 2);
  });

  await t.step("an update that changes nothing records nothing", async () => {
    ok(await update(owner, { repository_branch: "develop" }));
    ok(await update(owner, {}));
    assert.equal((await activityRows(sql, projectId, "project_updated")).length, 2);
    assert.equal((await manifestState(sql, projectId)).revision, 2);
  });

  await t.step("repository_url null clears it (the branch stays)", async () => {
    const { project } = ok<{ project: Project }>(await update(owner, { repository_url: null }));
    assert.equal(project.repository_url, null);
    assert.equal(project.repository_branch, "develop");
    assert.deepEqual(await manifestState(sql, projectId), {
      revision: 3,
      commands: [{ revision: 3 }],
    }, "the waiting command is brought up to date, not joined by another");
  });

  await t.step(
    "a project admin, and an organization owner who is a member, may update",
    async () => {
      const admin = await createUser(sql);
      await addMember(sql, projectId, admin, "admin");
      ok(await update(admin, { repository_branch: "main" }));
      const orgOwner = await createUser(sql);
      await sql`
      insert into public.organization_members (organization_id, user_id, role)
      values (${org}, ${orgOwner}, 'owner')`;
      await addMember(sql, projectId, orgOwner, "member");
      ok(await update(orgOwner, { repository_url: "git@github.com:acme/app.git" }));
      assert.equal(
        (await api.status(owner, projectId)).project.repository_url,
        "git@github.com:acme/app.git",
      );
    },
  );

  await t.step("a plain member gets 403 not_project_admin; nothing changes", async () => {
    const member = await createUser(sql);
    await addMember(sql, projectId, member, "member");
    const before = await api.status(owner, projectId);
    const answer = await update(member, { repository_url: "https://github.com/evil/app.git" });
    assert.equal(refused(answer, 403, "not_project_admin"), NOT_AN_ADMIN);
    assert.deepEqual(
      settled((await api.status(owner, projectId)).project),
      settled(before.project),
    );
  });

  await t.step(
    "a non-member, or a project that does not exist, is 403 not_project_member",
    async () => {
      for (const [who, stranger] of await nonMembers(sql, org)) {
        const answer = await update(stranger, { name: "Mine" });
        assert.deepEqual(answer.body, { error: NOT_A_MEMBER, code: "not_project_member" }, who);
      }
      const missing = await api.act(owner, "update", crypto.randomUUID(), { name: "x" });
      assert.equal(refused(missing, 403, "not_project_member"), NOT_A_MEMBER);
      assert.equal((await api.status(owner, projectId)).project.name, "Renamed");
    },
  );

  await t.step("without a valid token: 401, nothing changes", async () => {
    for (const [name, authorization] of await invalidAuthorizations(owner)) {
      const answer = await api.act(owner, "update", projectId, { name: "Anon" }, { authorization });
      assert.equal(answer.status, 401, name);
    }
    assert.equal((await api.status(owner, projectId)).project.name, "Renamed");
  });

  await t.step("400s name the field; a credential is refused and never echoed", async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ name: "" }, "name: must not be empty"],
      [{ repository_branch: "-x" }, "repository_branch: must be a branch name"],
      [{ repository_url: "ftp://example.com/app.git" }, "repository_url: must be a repository URL"],
      [
        { repository_url: "https://x-access-token:tok_42Secret@github.com/acme/app.git" },
        "repository_url: must not carry a credential: store the token as the project secret " +
        "GIT_TOKEN instead",
      ],
    ];
    for (const [fields, start] of cases) {
      const answer = await update(owner, fields);
      assert.ok(refused(answer, 400, "invalid_request").startsWith(start), answer.text);
      assert.ok(!answer.text.includes("tok_42Secret"));
    }
    assert.ok(!stack.output().includes("tok_42Secret"), "the credential is in no log line");
    assert.equal(
      refused(await api.act(owner, "update", "not-a-uuid", {}), 400),
      "project_id: must be a UUID string",
    );
  });

  await t.step("with ALLOW_LOCAL_REPOSITORY_URLS=false a local path is 400", async () => {
    assert.equal(
      ok<{ project: Project }>(await update(owner, { repository_url: "/srv/repos/app" })).project
        .repository_url,
      "/srv/repos/app",
      "the local stack takes it",
    );
    await using strict = await inProcess({ ...ACTION_ENV, ALLOW_LOCAL_REPOSITORY_URLS: "false" }, {
      db: stack.db,
    });
    const answer = await vmApi(strict).act(owner, "update", projectId, {
      repository_url: "file:///srv/repos/app",
    });
    assert.equal(
      refused(answer, 400, "invalid_request"),
      "repository_url: must be an https or SSH URL: file:// URLs and local paths are for the " +
        "local stack only",
    );
  });
});

Deno.test("update_manifest goes only to a VM that is up or coming up", async (t) => {
  await using stack = await inProcess(ACTION_ENV);
  const { sql } = stack.db;
  const api = vmApi(stack);
  const owner = await createUser(sql);
  const org = await createOrganization(sql, [owner]);
  for (const status of ["provisioning", "starting", "active", "running"]) {
    await t.step(`${status}: queued`, async () => {
      const id = await createProject(sql, org, [owner], { status });
      ok(await api.act(owner, "update", id, { repository_branch: "next" }));
      assert.deepEqual((await manifestState(sql, id)).commands, [{ revision: 2 }]);
    });
  }
  for (const status of ["stopping", "stopped", "deleting"]) {
    await t.step(`${status}: not queued (a VM reads its manifest when it boots)`, async () => {
      const id = await createProject(sql, org, [owner], { status });
      ok(await api.act(owner, "update", id, { repository_branch: "next" }));
      assert.deepEqual(await manifestState(sql, id), { revision: 2, commands: [] });
    });
  }
});

Deno.test("update sets the environment (contract §20): system_packages and check_command", async (t) => {
  await using stack = await inProcess(ACTION_ENV);
  const { sql } = stack.db;
  const api = vmApi(stack);
  const owner = await createUser(sql);
  const org = await createOrganization(sql, [owner]);
  const projectId = await createProject(sql, org, [owner], { status: "active" });
  const update = (userId: string, fields: Record<string, unknown>) =>
    api.act(userId, "update", projectId, fields);

  await t.step("the owner sets both; status answers them; update_manifest is queued", async () => {
    const { project } = ok<{ project: Project }>(
      await update(owner, {
        system_packages: ["ripgrep", "libpq-dev", "g++", "python3.11"],
        check_command: "  npm test  ",
      }),
    );
    assert.deepEqual(project.system_packages, ["ripgrep", "libpq-dev", "g++", "python3.11"]);
    assert.equal(project.check_command, "npm test", "trimmed");
    const status = (await api.status(owner, projectId)).project;
    assert.deepEqual(status.system_packages, project.system_packages);
    assert.equal(status.check_command, "npm test");
    assert.deepEqual(await manifestState(sql, projectId), {
      revision: 2,
      commands: [{ revision: 2 }],
    });
    assert.deepEqual(await activityRows(sql, projectId, "project_updated"), [{
      details: {
        system_packages: ["ripgrep", "libpq-dev", "g++", "python3.11"],
        check_command: "npm test",
      },
    }]);
  });

  await t.step("check_command null clears it; [] clears the packages", async () => {
    const { project } = ok<{ project: Project }>(
      await update(owner, { check_command: null, system_packages: [] }),
    );
    assert.equal(project.check_command, null);
    assert.deepEqual(project.system_packages, []);
    assert.ok((await manifestState(sql, projectId)).revision > 2);
  });

  await t.step("a plain member gets 403 not_project_admin; nothing changes", async () => {
    const member = await createUser(sql);
    await addMember(sql, projectId, member, "member");
    const answer = await update(member, { system_packages: ["curl"], check_command: "true" });
    assert.equal(refused(answer, 403, "not_project_admin"), NOT_AN_ADMIN);
    const status = (await api.status(owner, projectId)).project;
    assert.deepEqual(status.system_packages, []);
    assert.equal(status.check_command, null);
  });

  await t.step("a name that is not a Debian package name is 400 naming it", async () => {
    const cases: [unknown, string][] = [
      [["curl", "Bad_Name"], '"Bad_Name" is not a Debian package name'],
      [["curl; rm -rf /"], '"curl; rm -rf /" is not a Debian package name'],
      [["-o"], '"-o" is not a Debian package name'],
      [[""], '"" is not a Debian package name'],
      [["a".repeat(65)], `"${"a".repeat(65)}" is not a Debian package name`],
      [Array.from({ length: 51 }, (_, i) => `p${i}`), "must name at most 50 packages"],
      ["curl", "must be an array of Debian package names"],
      [[7], "must be an array of package names"],
    ];
    for (const [packages, message] of cases) {
      const answer = await update(owner, { system_packages: packages });
      const error = refused(answer, 400, "invalid_request");
      assert.ok(
        error.startsWith("system_packages") && error.includes(message),
        `${JSON.stringify(packages).slice(0, 60)}: ${error}`,
      );
    }
    ok(await update(owner, { system_packages: Array.from({ length: 50 }, (_, i) => `p${i}`) }));
    assert.equal((await api.status(owner, projectId)).project.system_packages.length, 50);
  });

  await t.step("a check_command empty or too long is 400", async () => {
    for (
      const [command, message] of [
        ["   ", "check_command: must not be empty: null clears it"],
        ["x".repeat(2001), "check_command: must be at most 2000 characters"],
        [42, "check_command: must be a string, or null for none"],
      ] as const
    ) {
      assert.equal(refused(await update(owner, { check_command: command }), 400), message);
    }
  });

  await t.step("the database refuses what vm-api would (an operator's own UPDATE)", async () => {
    await assert.rejects(
      sql`update public.projects set system_packages = '{"Not Debian"}' where id = ${projectId}`,
      /projects_system_packages_check/,
    );
    await assert.rejects(
      sql`update public.projects set check_command = '' where id = ${projectId}`,
      /projects_check_command_check/,
    );
  });
});

Deno.test("update sets the team review's rounds and reviewers (contract §21), checked", async (t) => {
  await using stack = await inProcess(ACTION_ENV);
  const { sql } = stack.db;
  const api = vmApi(stack);
  const owner = await createUser(sql);
  const org = await createOrganization(sql, [owner]);
  const id = await createProject(sql, org, [owner], { status: "active" });

  await t.step(
    "stored, answered as status answers them, in the activity and the manifest",
    async () => {
      type Reviewed = Project & { review_rounds: number; reviewers: string[] };
      const { project } = ok<{ project: Reviewed }>(
        await api.act(owner, "update", id, { review_rounds: 3, reviewers: ["octocat", "Mona-L"] }),
      );
      assert.equal(project.review_rounds, 3);
      assert.deepEqual(project.reviewers, ["octocat", "Mona-L"]);
      const status = (await api.status(owner, id)).project as unknown as Reviewed;
      assert.deepEqual(status.reviewers, ["octocat", "Mona-L"]);
      const [entry] = await activityRows(sql, id, "project_updated");
      assert.deepEqual(entry?.details, { review_rounds: 3, reviewers: ["octocat", "Mona-L"] });
      assert.deepEqual((await manifestState(sql, id)).commands, [{ revision: 2 }]);
      // Reviewers alone are not in the manifest: no new revision.
      ok(await api.act(owner, "update", id, { reviewers: [] }));
      assert.equal((await manifestState(sql, id)).revision, 2);
    },
  );

  await t.step("out of range, not GitHub logins, or too many: 400 naming the field", async () => {
    for (
      const [change, field] of [
        [{ review_rounds: 11 }, "review_rounds"],
        [{ review_rounds: -1 }, "review_rounds"],
        [{ reviewers: ["-leading-hyphen"] }, "reviewers"],
        [{ reviewers: ["two--hyphens"] }, "reviewers"],
        [{ reviewers: ["a".repeat(40)] }, "reviewers"],
        [{ reviewers: ["octocat", "OctoCat"] }, "reviewers"],
        [{ reviewers: Array.from({ length: 16 }, (_, i) => `user${i}`) }, "reviewers"],
      ] as const
    ) {
      const error = refused(await api.act(owner, "update", id, change), 400, "invalid_request");
      assert.match(error, new RegExp(`^${field}`), JSON.stringify(change));
    }
    const [{ review_rounds }] = await sql<[{ review_rounds: number }]>`
      select review_rounds from public.projects where id = ${id}`;
    assert.equal(review_rounds, 3, "nothing changed");
  });
});
