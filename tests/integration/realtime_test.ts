/**
 * Live by push (contract §14) through the real server (`scripts/start.ts`): the real supabase-js
 * client (its realtime-js, both protocol versions) joins a private channel and receives a commit's
 * event; refusals carry the hosted server's reasons; an expired token closes the channel as hosted
 * does; the frames on the wire, checked raw; a restart of the server loses no event a client
 * refetches on SUBSCRIBED; the partitions are kept ahead; a database without logical decoding runs
 * everything but Realtime.
 */
import assert from "node:assert/strict";
import { createClient, type RealtimeChannel, type SupabaseClient } from "@supabase/supabase-js";
import postgres from "postgres";
import { mintUserJwt } from "../../local/auth/jwt.ts";
import { freePort } from "../../local/host/free_port.ts";
import { migrate } from "../../local/database/migrations.ts";
import { startCluster } from "../../local/database/postgres_cluster.ts";
import { createTestDatabase, type TestDatabase } from "../helpers/database.ts";
import { ANON_KEY } from "../helpers/dashboard.ts";
import { createOrganization, createProject, createUser } from "../helpers/fixtures.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

const NO_SESSION = { persistSession: false, autoRefreshToken: false, detectSessionInUrl: false };

interface Tenant {
  userId: string;
  organizationId: string;
  projectId: string;
  token: string;
}

async function tenant(db: TestDatabase, role = "member"): Promise<Tenant> {
  const userId = await createUser(db.sql);
  const organizationId = await createOrganization(db.sql, [userId]);
  await db.sql`update public.organization_members set role = ${role} where user_id = ${userId}`;
  const projectId = await createProject(db.sql, organizationId, [userId]);
  return { userId, organizationId, projectId, token: await mintUserJwt(userId) };
}

/**
 * supabase-js as a dashboard makes it, speaking `vsn`, signed in with `token`. Its realtime client
 * asks `accessToken` for the token on connect, on every reconnect and heartbeat (a bare
 * `setAuth(token)` would be replaced by the anon key on the next reconnect: supabase-js hands
 * realtime-js a callback, which wins); `setAuth()` sends it at once.
 */
async function realtimeClient(
  server: TestServer,
  token: string,
  vsn: "1.0.0" | "2.0.0" = "2.0.0",
): Promise<SupabaseClient> {
  const client = createClient(server.origin, ANON_KEY, {
    auth: NO_SESSION,
    accessToken: () => Promise.resolve(token),
    realtime: { vsn },
  });
  await client.realtime.setAuth(token);
  return client;
}

type Status = { status: string; error?: Error };

/** Subscribes; resolves with the first status (SUBSCRIBED, CHANNEL_ERROR, TIMED_OUT, CLOSED). */
function subscribe(channel: RealtimeChannel, statuses: Status[] = []): Promise<Status> {
  return new Promise((resolve) => {
    channel.subscribe((status, error) => {
      statuses.push({ status, ...(error ? { error } : {}) });
      resolve({ status, ...(error ? { error } : {}) });
    });
  });
}

function waitFor<T>(what: string, check: () => T | undefined, timeoutMs = 10_000): Promise<T> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const tick = () => {
      const value = check();
      if (value !== undefined) return resolve(value);
      if (Date.now() - started > timeoutMs) {
        return reject(new Error(`no ${what} in ${timeoutMs} ms`));
      }
      setTimeout(tick, 10);
    };
    tick();
  });
}

async function eventRow(db: TestDatabase, type: string, projectId: string) {
  const [row] = await db.sql<[{ row: Record<string, unknown> }]>`
    select jsonb_build_object('id', id, 'type', type, 'organization_id', organization_id,
      'project_id', project_id, 'data', data, 'occurred_at', occurred_at) as row
    from public.events where type = ${type} and project_id = ${projectId}
    order by occurred_at desc, id desc limit 1`;
  return row.row;
}

Deno.test("supabase-js joins a private project channel and receives a status change within 1 s of the commit, vsn 2.0.0 and 1.0.0", async () => {
  await using db = await createTestDatabase();
  const a = await tenant(db);
  await using server = await startServer(db.url);
  const statuses = ["stopping", "stopped"];
  for (const vsn of ["2.0.0", "1.0.0"] as const) {
    const client = await realtimeClient(server, a.token, vsn);
    try {
      const received: Array<{ at: number; message: Record<string, unknown> }> = [];
      const channel = client.channel(`project:${a.projectId}`, { config: { private: true } })
        .on("broadcast", { event: "project.status_changed" }, (message) => {
          received.push({ at: performance.now(), message });
        });
      assert.deepEqual(await subscribe(channel), { status: "SUBSCRIBED" }, vsn);

      const status = statuses.shift()!;
      const before = performance.now();
      await db.sql`update public.projects set status = ${status} where id = ${a.projectId}`;
      const committed = performance.now();
      const got = await waitFor("broadcast", () => received[0]);
      // From before the UPDATE was sent (its round trip and commit included) to the callback.
      const latency = got.at - before;
      console.log(
        `vsn ${vsn}: commit → callback ${latency.toFixed(1)} ms ` +
          `(the UPDATE's own round trip ${(committed - before).toFixed(1)} ms)`,
      );
      assert.ok(latency < 1000, `${vsn}: ${latency} ms`);
      assert.equal(got.message.event, "project.status_changed");
      assert.equal(got.message.type, "broadcast");
      assert.deepEqual(
        got.message.payload,
        await eventRow(db, "project.status_changed", a.projectId),
        `${vsn}: the payload is the event row`,
      );
      assert.equal((got.message.payload as { data: { status: string } }).data.status, status);
      assert.match(String((got.message.meta as { id?: string })?.id), /^[0-9a-f-]{36}$/);
    } finally {
      await client.removeAllChannels();
    }
  }
});

Deno.test("the organization's channel is its owners' and admins'; another organization's user is refused with the hosted reason", async () => {
  await using db = await createTestDatabase();
  const owner = await tenant(db, "owner");
  const member = await createUser(db.sql);
  await db.sql`insert into public.organization_members (organization_id, user_id, role)
               values (${owner.organizationId}, ${member}, 'member')`;
  const other = await tenant(db);
  await using server = await startServer(db.url);

  const outsider = await realtimeClient(server, other.token);
  const plain = await realtimeClient(server, await mintUserJwt(member));
  const admin = await realtimeClient(server, owner.token);
  try {
    const refused = await subscribe(
      outsider.channel(`project:${owner.projectId}`, { config: { private: true } }),
    );
    assert.equal(refused.status, "CHANNEL_ERROR");
    assert.equal(
      refused.error?.message,
      `Unauthorized: You do not have permissions to read from this Channel topic: project:${owner.projectId}`,
    );

    const notAdmin = await subscribe(
      plain.channel(`organization:${owner.organizationId}`, { config: { private: true } }),
    );
    assert.equal(notAdmin.status, "CHANNEL_ERROR");
    assert.match(notAdmin.error!.message, /^Unauthorized: /);

    const received: Record<string, unknown>[] = [];
    const orgChannel = admin.channel(`organization:${owner.organizationId}`, {
      config: { private: true },
    }).on("broadcast", { event: "*" }, (message) => received.push(message));
    assert.deepEqual(await subscribe(orgChannel), { status: "SUBSCRIBED" });
    await db.sql`update public.projects set health_status = 'healthy'
                 where id = ${owner.projectId}`;
    await db.sql`update public.projects set health_status = 'healthy'
                 where id = ${other.projectId}`;
    const got = await waitFor("organization broadcast", () => received[0]);
    assert.equal(got.event, "project.health_changed");
    assert.equal((got.payload as { project_id: string }).project_id, owner.projectId);
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(received.length, 1, "another organization's events never reach it");

    const publicChannel = await subscribe(admin.channel(`project:${owner.projectId}`));
    assert.equal(publicChannel.status, "CHANNEL_ERROR");
    assert.equal(
      publicChannel.error?.message,
      "PrivateOnly: This project only allows private channels",
    );
  } finally {
    for (const client of [outsider, plain, admin]) await client.removeAllChannels();
  }
});

Deno.test("an expired token closes the channel as hosted does: a system error, then phx_close", async () => {
  await using db = await createTestDatabase();
  const a = await tenant(db);
  await using server = await startServer(db.url);

  const expired = await realtimeClient(server, await mintUserJwt(a.userId, { expiresIn: -30 }));
  const shortLived = await realtimeClient(server, await mintUserJwt(a.userId, { expiresIn: 2 }));
  try {
    const refused = await subscribe(
      expired.channel(`project:${a.projectId}`, { config: { private: true } }),
    );
    assert.equal(refused.status, "CHANNEL_ERROR");
    assert.match(refused.error!.message, /^InvalidJWTToken: Token has expired 3\d seconds ago$/);

    const system: Record<string, unknown>[] = [];
    const statuses: Status[] = [];
    const channel = shortLived.channel(`project:${a.projectId}`, { config: { private: true } })
      .on("system", {}, (payload) => system.push(payload));
    assert.deepEqual(await subscribe(channel, statuses), { status: "SUBSCRIBED" });
    await waitFor("CLOSED", () => statuses.find((s) => s.status === "CLOSED"), 5_000);
    assert.equal(system.length, 1);
    assert.deepEqual(
      { ...system[0], message: String(system[0]!.message).replace(/\d+/, "N") },
      {
        extension: "system",
        status: "error",
        message: "Token has expired N seconds ago",
        channel: `project:${a.projectId}`,
      },
    );
    assert.equal(channel.state, "closed");
  } finally {
    await expired.removeAllChannels();
    await shortLived.removeAllChannels();
  }
});

/** A raw WebSocket on the stack's Realtime endpoint, frames kept in order. */
async function rawSocket(server: TestServer, vsn: "1.0.0" | "2.0.0") {
  const url = `${server.origin.replace("http", "ws")}/realtime/v1/websocket?apikey=${ANON_KEY}` +
    `&vsn=${vsn}`;
  const socket = new WebSocket(url);
  socket.binaryType = "arraybuffer";
  const frames: Array<string | ArrayBuffer> = [];
  socket.onmessage = (event) => frames.push(event.data);
  await new Promise((resolve, reject) => {
    socket.onopen = resolve;
    socket.onerror = () => reject(new Error(`cannot connect to ${url}`));
  });
  let read = 0;
  return {
    send: (frame: unknown) => socket.send(JSON.stringify(frame)),
    next: () => waitFor("frame", () => (frames.length > read ? frames[read++] : undefined)),
    async close() {
      if (socket.readyState === WebSocket.CLOSED) return;
      const closed = new Promise((resolve) => (socket.onclose = resolve));
      socket.close();
      await closed;
    },
  };
}

Deno.test("the frames on the wire: vsn 2.0.0 arrays and the binary broadcast, vsn 1.0.0 objects", async (t) => {
  await using db = await createTestDatabase();
  const a = await tenant(db);
  const other = await tenant(db);
  await using server = await startServer(db.url);
  const topic = `realtime:project:${a.projectId}`;
  const config = {
    broadcast: { ack: false, self: false },
    presence: { key: "", enabled: false },
    postgres_changes: [],
    private: true,
  };

  await t.step("2.0.0", async () => {
    const ws = await rawSocket(server, "2.0.0");
    try {
      ws.send([null, "1", "phoenix", "heartbeat", {}]);
      assert.deepEqual(JSON.parse(await ws.next() as string), [
        null,
        "1",
        "phoenix",
        "phx_reply",
        { status: "ok", response: {} },
      ]);
      ws.send(["2", "2", topic, "phx_join", { config, access_token: a.token }]);
      assert.deepEqual(JSON.parse(await ws.next() as string), [
        "2",
        "2",
        topic,
        "phx_reply",
        { status: "ok", response: { postgres_changes: [] } },
      ]);

      await db.sql`update public.projects set status = 'stopping' where id = ${a.projectId}`;
      const frame = await ws.next();
      assert.ok(frame instanceof ArrayBuffer, "a broadcast from the database is a binary frame");
      const bytes = new Uint8Array(frame);
      const [kind, topicSize, eventSize, metaSize, encoding] = bytes;
      assert.deepEqual([kind, encoding], [4, 1], "user broadcast, JSON payload");
      const text = new TextDecoder();
      let at = 5;
      const take = (n: number) => text.decode(bytes.subarray(at, at += n));
      assert.equal(take(topicSize!), topic);
      assert.equal(take(eventSize!), "project.status_changed");
      const meta = JSON.parse(take(metaSize!));
      const [message] = await db.sql`
        select id::text from realtime.messages where topic = ${`project:${a.projectId}`}
          and event = 'project.status_changed'`;
      assert.deepEqual(meta, { id: message!.id });
      assert.deepEqual(
        JSON.parse(text.decode(bytes.subarray(at))),
        await eventRow(db, "project.status_changed", a.projectId),
      );

      ws.send(["9", "3", "realtime:elsewhere", "access_token", { access_token: a.token }]);
      assert.deepEqual(JSON.parse(await ws.next() as string), [
        "9",
        "3",
        "realtime:elsewhere",
        "phx_reply",
        { status: "error", response: { reason: "unmatched topic" } },
      ]);

      // Another user's token on the joined channel: no longer allowed, closed as hosted closes it.
      ws.send(["2", "4", topic, "access_token", { access_token: other.token }]);
      assert.deepEqual(JSON.parse(await ws.next() as string), ["2", null, topic, "system", {
        extension: "system",
        status: "error",
        message:
          `You do not have permissions to read from this Channel topic: project:${a.projectId}`,
        channel: `project:${a.projectId}`,
      }]);
      assert.deepEqual(JSON.parse(await ws.next() as string), ["2", "2", topic, "phx_close", {}]);

      ws.send(["5", "5", topic, "phx_join", { config, access_token: a.token }]);
      assert.equal(JSON.parse(await ws.next() as string)[4].status, "ok");
      ws.send(["5", "6", topic, "phx_leave", {}]);
      assert.deepEqual(JSON.parse(await ws.next() as string), [
        "5",
        "6",
        topic,
        "phx_reply",
        { status: "ok", response: {} },
      ]);
      assert.deepEqual(JSON.parse(await ws.next() as string), ["5", "5", topic, "phx_close", {}]);
    } finally {
      await ws.close();
    }
  });

  await t.step("1.0.0", async () => {
    const ws = await rawSocket(server, "1.0.0");
    try {
      ws.send({ topic, event: "phx_join", payload: { config, access_token: a.token }, ref: "1" });
      assert.deepEqual(JSON.parse(await ws.next() as string), {
        topic,
        event: "phx_reply",
        payload: { status: "ok", response: { postgres_changes: [] } },
        ref: "1",
      });
      await db.sql`update public.projects set status = 'stopped' where id = ${a.projectId}`;
      const frame = JSON.parse(await ws.next() as string);
      const [message] = await db.sql`
        select id::text from realtime.messages where topic = ${`project:${a.projectId}`}
          and event = 'project.status_changed' order by inserted_at desc limit 1`;
      assert.deepEqual(frame, {
        topic,
        event: "broadcast",
        payload: {
          event: "project.status_changed",
          payload: await eventRow(db, "project.status_changed", a.projectId),
          type: "broadcast",
          meta: { id: message!.id },
        },
        ref: null,
      });
    } finally {
      await ws.close();
    }
  });

  await t.step("at most 100 channels a connection, as hosted", async () => {
    const projects = await db.sql<{ id: string }[]>`
      with made as (
        insert into public.projects (organization_id, name)
        select ${a.organizationId}, 'P' || g from generate_series(1, 101) g returning id
      )
      insert into public.project_members (project_id, user_id, role)
      select id, ${a.userId}, 'owner' from made returning project_id as id`;
    const ws = await rawSocket(server, "2.0.0");
    try {
      const replies = [];
      for (const [i, project] of projects.entries()) {
        const joinTopic = `realtime:project:${project.id}`;
        ws.send([`j${i}`, `r${i}`, joinTopic, "phx_join", { config, access_token: a.token }]);
        // A join's reply is a text frame; a broadcast to a channel joined before it (the new
        // projects' own events, binary in 2.0.0) may come in between.
        let reply = await ws.next();
        while (typeof reply !== "string") reply = await ws.next();
        replies.push(JSON.parse(reply));
      }
      assert.deepEqual(
        replies.slice(0, 100).map((reply) => reply[4].status),
        Array(100).fill("ok"),
      );
      assert.deepEqual(replies[100][4], {
        status: "error",
        response: { reason: "ChannelRateLimitReached: Too many channels" },
      });
    } finally {
      await ws.close();
    }
  });

  await t.step("a connection without a valid API key is refused before the upgrade", async () => {
    const response = await fetch(
      `${server.origin}/realtime/v1/websocket?apikey=${a.token}&vsn=2.0.0`,
      { headers: { upgrade: "websocket" } },
    );
    assert.equal(response.status, 401);
    await response.body?.cancel();
  });
});

Deno.test("a restart of the server loses no event: the client is SUBSCRIBED again and refetches", async () => {
  await using db = await createTestDatabase();
  const a = await tenant(db);
  const port = freePort();
  let server = await startServer(db.url, { PORT: String(port) });
  const client = await realtimeClient(server, a.token);
  // What a dashboard does: refetch on every SUBSCRIBED, and apply broadcasts in between.
  const seen = new Set<string>();
  let subscribed = 0;
  const refetch = async () => {
    const { data, error } = await client.from("events").select("id").eq("project_id", a.projectId);
    assert.equal(error, null);
    for (const row of data!) seen.add(row.id);
  };
  client.channel(`project:${a.projectId}`, { config: { private: true } })
    .on("broadcast", { event: "*" }, ({ payload }) => seen.add(payload.id))
    .subscribe((status) => {
      if (status === "SUBSCRIBED") {
        subscribed++;
        refetch();
      }
    });
  try {
    await waitFor("SUBSCRIBED", () => (subscribed === 1 ? true : undefined));
    await db.sql`update public.projects set status = 'stopping' where id = ${a.projectId}`;

    await server.stop();
    // Committed while no Realtime server runs: only the refetch can bring it.
    await db.sql`update public.projects set status = 'stopped' where id = ${a.projectId}`;
    server = await startServer(db.url, { PORT: String(port) });
    await waitFor("SUBSCRIBED again", () => (subscribed >= 2 ? true : undefined), 20_000);
    await db.sql`update public.projects set status = 'starting' where id = ${a.projectId}`;

    const all = await db.sql<{ id: string }[]>`
      select id::text from public.events where project_id = ${a.projectId}`;
    await waitFor("every event", () => all.every((row) => seen.has(row.id)) ? true : undefined);
  } finally {
    await client.removeAllChannels();
    await server.stop();
  }
});

Deno.test("the server keeps realtime.messages' partitions from yesterday to three days ahead and drops old ones", async () => {
  await using db = await createTestDatabase();
  await db.sql.unsafe(`
    create table realtime.messages_2000_01_01 partition of realtime.messages
      for values from ('2000-01-01') to ('2000-01-02')`);
  await db.sql`drop table if exists realtime.${db.sql(`messages_${(await today(db.sql)).plus3}`)}`;
  await using _server = await startServer(db.url);
  const partitions = (await db.sql<{ name: string }[]>`
    select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid
    where i.inhparent = 'realtime.messages'::regclass order by 1`).map((row) => row.name);
  const days = await db.sql<{ name: string }[]>`
    select 'messages_' || to_char(d, 'YYYY_MM_DD') as name
    from generate_series(current_date - 1, current_date + 3, interval '1 day') d`;
  for (const { name } of days) assert.ok(partitions.includes(name), `${name} in ${partitions}`);
  assert.ok(!partitions.includes("messages_2000_01_01"), "an old partition is dropped");
});

async function today(sql: postgres.Sql) {
  const [row] = await sql<[{ plus3: string }]>`
    select to_char(current_date + 3, 'YYYY_MM_DD') as plus3`;
  return row;
}

Deno.test("a database without wal_level=logical gets one sentence at start, and everything but Realtime runs", async () => {
  const dir = await Deno.makeTempDir({ prefix: "vm-service-replica-" });
  const cluster = await startCluster({
    dataDir: `${dir}/postgres`,
    settings: { fsync: "off", wal_level: "replica" },
  });
  try {
    await migrate(cluster.url);
    await using server = await startServer(cluster.url);
    assert.match(
      server.output(),
      /Realtime: not started: this database runs with wal_level=replica: set wal_level = logical .*; everything else runs\./,
    );
    const realtime = await fetch(`${server.origin}/realtime/v1/websocket?apikey=${ANON_KEY}`);
    assert.equal(realtime.status, 503);
    await realtime.body?.cancel();
    const api = await fetch(server.functionUrl("vm-api"), { method: "POST", body: "{}" });
    assert.equal(api.status, 401, "vm-api answers");
    await api.body?.cancel();
  } finally {
    await cluster.stop();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});
