/**
 * `deno task realtime-cost`: what the local Realtime server costs per 1,000 subscribers on this
 * machine. A throw-away cluster (wal_level=logical), one project with REALTIME_SUBSCRIBERS members
 * (default 1000), the Realtime server in a process of its own (as `deno task start` runs it: the
 * same module behind a Deno.serve), and one WebSocket (vsn 2.0.0, the default of realtime-js) per
 * member joined to `project:<id>`, heartbeating as realtime-js does. It reports:
 *
 * - memory: the server's resident set before any connection and with every subscriber joined;
 * - CPU: the server's CPU time for the joins (each one an authorization probe), for
 *   REALTIME_IDLE_SECONDS of idle subscribers (heartbeats), and per event fanned out;
 * - fan-out latency: REALTIME_EVENTS (default 50) status changes, each committed by an UPDATE as a
 *   user's action would be, timed from before the UPDATE to each subscriber's receipt of its
 *   broadcast: p50/p95/max of every delivery, and of the last subscriber of each event.
 *
 * `--serve <databaseUrl>` is the server process's own entry point.
 */
import postgres from "postgres";
import { mintApiKey, mintUserJwt } from "../local/auth/jwt.ts";
import { cpuMicros } from "./process_cpu.ts";
import { startRealtime } from "../local/realtime/server.ts";
import { startThrowawayDatabase } from "../local/database/throwaway_database.ts";
import { LOCAL_JWT_SECRET } from "../supabase/functions/_shared/config.ts";

if (Deno.args[0] === "--serve") {
  await serve(Deno.args[1]!);
} else {
  await measure();
}

async function serve(databaseUrl: string): Promise<void> {
  const started = await startRealtime({ databaseUrl, jwtSecret: LOCAL_JWT_SECRET });
  if (!started.ok) throw new Error(started.problem);
  const realtime = started.server;
  Deno.serve({
    hostname: "127.0.0.1",
    port: 0,
    onListen: ({ port }) => console.log(`listening ${port}`),
  }, (request) => realtime.handle(request));
  // The parent follows the joined channels through these lines.
  setInterval(() => {
    const stats = realtime.stats();
    console.log(`stats ${JSON.stringify(stats)}`);
  }, 500);
}

async function measure(): Promise<void> {
  const subscribers = Number(Deno.env.get("REALTIME_SUBSCRIBERS") ?? 1000);
  const events = Number(Deno.env.get("REALTIME_EVENTS") ?? 50);
  const idleSeconds = Number(Deno.env.get("REALTIME_IDLE_SECONDS") ?? 30);
  const say = (line: string) => console.log(`[realtime-cost] ${line}`);

  const database = await startThrowawayDatabase("realtime_cost", () => {});
  const sql = postgres(database.url, { max: 2, onnotice: () => {} });
  let server: Deno.ChildProcess | undefined;
  const sockets: WebSocket[] = [];
  try {
    const [org] = await sql`insert into public.organizations (name) values ('Cost') returning id`;
    const [project] = await sql`
      insert into public.projects (organization_id, name, status)
      values (${org!.id}, 'Cost', 'active') returning id`;
    const users = await sql<{ id: string }[]>`
      insert into auth.users (id, email)
      select gen_random_uuid(), 'u' || g || '@example.test' from generate_series(1, ${subscribers}) g
      returning id`;
    await sql`
      insert into public.project_members (project_id, user_id, role)
      select ${project!.id}, id, 'member' from auth.users`;
    const tokens = await Promise.all(users.map((u) => mintUserJwt(u.id)));
    const anonKey = await mintApiKey("anon");

    server = new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", new URL(import.meta.url).pathname, "--serve", database.url],
      stdout: "piped",
      stderr: "inherit",
    }).spawn();
    let stats: { channels: number; delivered: number } = { channels: 0, delivered: 0 };
    const lines = server.stdout.pipeThrough(new TextDecoderStream()).getReader();
    let port = 0;
    let buffer = "";
    const pump = (async () => {
      for (;;) {
        const { value, done } = await lines.read();
        if (done) return;
        buffer += value;
        let newline: number;
        while ((newline = buffer.indexOf("\n")) >= 0) {
          const line = buffer.slice(0, newline);
          buffer = buffer.slice(newline + 1);
          if (line.startsWith("listening ")) port = Number(line.slice(10));
          if (line.startsWith("stats ")) stats = JSON.parse(line.slice(6));
        }
      }
    })();
    await until(() => port > 0, 30_000);
    await until(() => stats.channels === 0 && port > 0, 5_000);
    await sleep(1000);
    const pid = server.pid;
    const rssBefore = rssKiB(pid);

    // Connect and join, 50 at a time (a page load's burst, not a storm).
    const topic = `realtime:project:${project!.id}`;
    const url = `ws://127.0.0.1:${port}/realtime/v1/websocket?apikey=${anonKey}&vsn=2.0.0`;
    // Events are sent one at a time, each awaited by every subscriber: a broadcast belongs to the
    // event in flight, timed from before its UPDATE was sent.
    let sentAt = 0;
    let received = 0;
    let last = 0;
    const deliveries: number[] = [];
    const lasts: number[] = [];
    const cpuJoinStart = cpuMicros(pid);
    const joinStarted = performance.now();
    for (let i = 0; i < subscribers; i += 50) {
      await Promise.all(
        tokens.slice(i, i + 50).map(async (token) => {
          const socket = new WebSocket(url);
          socket.binaryType = "arraybuffer";
          sockets.push(socket);
          await new Promise((resolve, reject) => {
            socket.onopen = resolve;
            socket.onerror = () => reject(new Error("cannot connect"));
          });
          const joined = new Promise<void>((resolve, reject) => {
            socket.onmessage = (event) => {
              if (typeof event.data === "string") {
                const [, , , kind, payload] = JSON.parse(event.data);
                if (kind === "phx_reply" && payload.response?.postgres_changes) resolve();
                else if (kind === "phx_reply" && payload.status === "error") {
                  reject(new Error(JSON.stringify(payload)));
                }
                return;
              }
              // A broadcast (binary, kind 4) of the event in flight.
              if (sentAt === 0) return;
              const latency = performance.now() - sentAt;
              deliveries.push(latency);
              last = Math.max(last, latency);
              received++;
            };
          });
          socket.send(JSON.stringify([
            "1",
            "1",
            topic,
            "phx_join",
            {
              config: {
                broadcast: { ack: false, self: false },
                private: true,
                postgres_changes: [],
              },
              access_token: token,
            },
          ]));
          await joined;
        }),
      );
    }
    const joinMs = performance.now() - joinStarted;
    const cpuJoins = cpuMicros(pid) - cpuJoinStart;
    await until(() => stats.channels >= subscribers, 10_000);
    let ref = 100;
    const heartbeat = setInterval(() => {
      for (const socket of sockets) {
        if (socket.readyState === WebSocket.OPEN) {
          socket.send(JSON.stringify([null, String(ref++), "phoenix", "heartbeat", {}]));
        }
      }
    }, 25_000);
    try {
      await sleep(2000);
      const rssJoined = rssKiB(pid);
      say(`${subscribers} subscribers joined in ${(joinMs / 1000).toFixed(1)} s`);

      const cpuIdleStart = cpuMicros(pid);
      await sleep(idleSeconds * 1000);
      const cpuIdle = cpuMicros(pid) - cpuIdleStart;

      // Fan-out: one status change at a time, each awaited by every subscriber.
      const cpuEventsStart = cpuMicros(pid);
      const statuses = ["stopping", "stopped", "starting", "active"];
      for (let e = 0; e < events; e++) {
        received = 0;
        last = 0;
        sentAt = performance.now();
        await sql`update public.projects set status = ${statuses[e % statuses.length]!}
                  where id = ${project!.id}`;
        await until(() => received >= subscribers, 10_000)
          .catch(() => say(`event ${e}: ${received} deliveries`));
        lasts.push(last);
        sentAt = 0;
        await sleep(50);
      }
      const cpuEvents = cpuMicros(pid) - cpuEventsStart;

      const sorted = [...deliveries].sort((a, b) => a - b);
      lasts.sort((a, b) => a - b);
      const pct = (xs: number[], p: number) =>
        xs.length ? xs[Math.min(xs.length - 1, Math.floor(xs.length * p))]! : NaN;
      const per1000 = 1000 / subscribers;
      say(
        `memory (RSS): ${mib(rssBefore)} MiB idle, ${mib(rssJoined)} MiB with ` +
          `${subscribers} subscribers: ${mib((rssJoined - rssBefore) * per1000)} MiB per 1,000`,
      );
      say(
        `CPU, joins: ${(cpuJoins / 1000).toFixed(0)} ms for ${subscribers} ` +
          `(${(cpuJoins / subscribers).toFixed(0)} µs a join)`,
      );
      say(
        `CPU, idle subscribers: ${(cpuIdle / 1000).toFixed(0)} ms over ${idleSeconds} s ` +
          `(${(cpuIdle / idleSeconds / 10_000 * per1000).toFixed(2)} % of a core per 1,000)`,
      );
      say(
        `CPU, fan-out: ${(cpuEvents / events / 1000).toFixed(1)} ms per event to ` +
          `${subscribers} subscribers (${
            (cpuEvents / events / subscribers).toFixed(1)
          } µs a delivery)`,
      );
      say(`deliveries: ${deliveries.length} of ${events * subscribers}`);
      say(
        `fan-out latency, every delivery: p50 ${pct(sorted, 0.5).toFixed(1)} ms, ` +
          `p95 ${pct(sorted, 0.95).toFixed(1)} ms, max ${sorted.at(-1)?.toFixed(1)} ms`,
      );
      say(
        `fan-out latency, the last subscriber of each event: p50 ${
          pct(lasts, 0.5).toFixed(1)
        } ms, p95 ${pct(lasts, 0.95).toFixed(1)} ms`,
      );
    } finally {
      clearInterval(heartbeat);
    }
    for (const socket of sockets) socket.close();
    server.kill("SIGTERM");
    await server.status;
    await pump.catch(() => {});
  } finally {
    try {
      server?.kill("SIGKILL");
    } catch { /* gone */ }
    await sql.end();
    await database.stop();
  }
}

function rssKiB(pid: number): number {
  const status = Deno.readTextFileSync(`/proc/${pid}/status`);
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
}

function mib(kib: number): string {
  return (kib / 1024).toFixed(1);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function until(check: () => boolean, timeoutMs: number): Promise<void> {
  const started = Date.now();
  while (!check()) {
    if (Date.now() - started > timeoutMs) throw new Error(`not within ${timeoutMs} ms`);
    await sleep(10);
  }
}
