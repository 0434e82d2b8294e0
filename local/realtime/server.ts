/**
 * The local Realtime server (never deployed): `/realtime/v1/websocket` as Supabase Realtime serves
 * it to realtime-js, for Broadcast from Database on private channels. A faithful stand-in of the
 * part of the protocol our clients use (docs/architecture.md says what differs from hosted):
 *
 * - **Socket**: Deno's own WebSocket upgrade on the stack's one port (`vsn` 1.0.0 or 2.0.0, see
 *   protocol.ts). The `apikey` (query parameter or `x-api-key` header) must be a JWT with `role`
 *   and `exp` signed with the project's secret, as the hosted server checks it on connect.
 * - **Channels**: `phx_join` on `realtime:<topic>` with `config.private` and `access_token` (else
 *   the API key's claims); replies `{"postgres_changes": []}`, on which realtime-js reports
 *   SUBSCRIBED. A private join is authorized as the hosted server does it: in a transaction, a
 *   probe row of `realtime.messages` inserted with the topic, then, as the token's role with
 *   `request.jwt.claims` and `realtime.topic` set, selected back: seen means the user may read the
 *   channel; rolled back either way. Refusals carry the hosted reasons ("Unauthorized: You do not
 *   have permissions to read from this Channel topic: <topic>", "InvalidJWTToken: Token has
 *   expired N seconds ago", ...). Like a hosted project with "Allow public access" off, only
 *   private channels are served.
 * - **Tokens**: `access_token` on a channel re-authorizes it (revoked read closes it); a token's
 *   `exp` is watched (at most every 5 minutes, and at the second it expires), and an expired one
 *   closes the channel as hosted does: a `system` message
 *   `{"extension":"system","status":"error","message":"Token has expired N seconds ago",...}`, then
 *   `phx_close`.
 * - **Feed**: logical replication of `realtime.messages` (replication.ts); each committed row goes
 *   to the channels joined to its topic, encoded once per protocol version. A join waits for the
 *   feed to stream, so whatever commits after the SUBSCRIBED a client refetches on is delivered;
 *   when the feed is lost every channel gets `phx_error` (as a crashed channel does), so clients
 *   rejoin and refetch once it is back.
 * - **Bounds**: at most `channelsPerConnection` channels a connection ("ChannelRateLimitReached:
 *   Too many channels"), `maxConnections` connections ("Too many connected users", 429), no frame
 *   from the client for `heartbeatTimeoutMs` closes it (realtime-js beats every 25 s), frames over
 *   `maxFrameBytes` close it, and a connection whose unsent data passes `maxBufferedBytes` (a
 *   client that does not read) is closed rather than buffered without end: realtime-js reconnects,
 *   rejoins and refetches.
 */
import { decodeJwt, errors, jwtVerify } from "jose";
import postgres from "postgres";
import {
  type Broadcast,
  decodeFrame,
  encodeBroadcast,
  encodePush,
  encodeReply,
  type Frame,
  parseVsn,
  type Vsn,
} from "./protocol.ts";
import { maintainMessagePartitions } from "./partitions.ts";
import {
  ensurePublication,
  logicalReplicationProblem,
  type MessageRow,
  type ReplicationFeed,
  startReplicationFeed,
} from "./replication.ts";

export interface RealtimeLimits {
  channelsPerConnection: number;
  maxConnections: number;
  heartbeatTimeoutMs: number;
  maxFrameBytes: number;
  maxBufferedBytes: number;
}

export const DEFAULT_LIMITS: RealtimeLimits = {
  // Hosted defaults: max_channels_per_client 100; Phoenix closes a socket silent for 60 s;
  // the hosted endpoint's max_frame_size is 5 MB.
  channelsPerConnection: 100,
  maxConnections: 10_000,
  heartbeatTimeoutMs: 60_000,
  maxFrameBytes: 5_000_000,
  maxBufferedBytes: 4 * 1024 * 1024,
};

export interface RealtimeOptions {
  /**
   * The database: a small pool of its own (authorization probes, partition upkeep) and the
   * replication connection (a role that may replicate).
   */
  databaseUrl: string;
  /** Connections of the pool (default 4): joins wait for one, nothing else does. */
  poolSize?: number;
  /** The project's HS256 JWT secret, as the hosted tenant's `jwt_secret`. */
  jwtSecret: string;
  limits?: Partial<RealtimeLimits>;
  /** How long a join waits for the feed to stream before it is refused. */
  feedWaitMs?: number;
  log?: (line: string) => void;
}

export interface RealtimeStats {
  connections: number;
  channels: number;
  streaming: boolean;
  /** Broadcasts written to sockets since start. */
  delivered: number;
  /** Connections closed for not reading (backpressure) or for silence (heartbeat). */
  closedSlow: number;
  closedSilent: number;
}

export interface RealtimeServer {
  /** `/realtime/v1/...` requests (the gateway strips nothing). */
  handle(request: Request): Promise<Response>;
  stats(): RealtimeStats;
  close(): Promise<void>;
}

/** Why Realtime cannot run on this database, or the running server. */
export type RealtimeStart = { ok: true; server: RealtimeServer } | { ok: false; problem: string };

const CONFIRM_TOKEN_MAX_MS = 5 * 60_000;
const JANITOR_INTERVAL_MS = 60 * 60_000;
const SWEEP_INTERVAL_MS = 5_000;
const API_ROLES = new Set(["anon", "authenticated", "service_role"]);

interface Claims {
  role: string;
  exp: number;
  sub?: string;
  [claim: string]: unknown;
}

type TokenCheck =
  | { ok: true; claims: Claims }
  | { ok: false; kind: "expired" | "claims" | "signature" | "malformed"; message: string };

interface Channel {
  connection: Connection;
  /** `realtime:<sub topic>`, as joined. */
  topic: string;
  subTopic: string;
  joinRef: string | null;
  private: boolean;
  token: string;
  claims: Claims;
  /** Listed in the fan-out table (joined, not leaving). */
  live: boolean;
  expiry?: ReturnType<typeof setTimeout>;
}

interface Connection {
  socket: WebSocket;
  vsn: Vsn;
  apiKey: string;
  headers: Record<string, string>;
  channels: Map<string, Channel>;
  lastSeen: number;
  queue: Promise<void>;
  closed: boolean;
}

export async function startRealtime(options: RealtimeOptions): Promise<RealtimeStart> {
  const log = options.log ?? (() => {});
  const sql = postgres(options.databaseUrl, {
    max: options.poolSize ?? 4,
    idle_timeout: 60,
    connect_timeout: 5,
    onnotice: () => {},
    connection: { application_name: "realtime" },
  });
  try {
    const problem = await logicalReplicationProblem(sql);
    if (problem) {
      await sql.end();
      return { ok: false, problem };
    }
    await maintainMessagePartitions(sql);
    await ensurePublication(sql);
  } catch (error) {
    await sql.end({ timeout: 1 });
    throw error;
  }

  const limits = { ...DEFAULT_LIMITS, ...options.limits };
  const feedWaitMs = options.feedWaitMs ?? 5_000;
  const secret = new TextEncoder().encode(options.jwtSecret);
  const connections = new Set<Connection>();
  /** `p:<sub topic>` (private) → its live channels. */
  const subscribers = new Map<string, Set<Channel>>();
  const stats = { delivered: 0, closedSlow: 0, closedSilent: 0 };

  const feed: ReplicationFeed = startReplicationFeed({
    databaseUrl: options.databaseUrl,
    log,
    onMessage: fanOut,
    onState(streaming) {
      // What committed while the feed was down is lost: every channel rejoins and refetches.
      if (!streaming) { for (const connection of connections) errorAll(connection); }
    },
  });

  const janitor = setInterval(() => {
    maintainMessagePartitions(sql).catch((error) =>
      log(`realtime.messages partitions: ${(error as Error).message}`)
    );
  }, JANITOR_INTERVAL_MS);
  const sweeper = setInterval(() => {
    const silentSince = Date.now() - limits.heartbeatTimeoutMs;
    for (const connection of connections) {
      if (connection.lastSeen < silentSince) {
        stats.closedSilent++;
        closeConnection(connection, 1000, "heartbeat timeout");
      }
    }
  }, SWEEP_INTERVAL_MS);

  // ------------------------------------------------------------------ the feed's fan-out

  function fanOut(row: MessageRow): void {
    const channels = subscribers.get(`${row.private ? "p" : "o"}:${row.topic}`);
    if (!channels || channels.size === 0) return;
    const message: Broadcast = { event: row.event, payload: row.payload, id: row.id };
    const topic = `realtime:${row.topic}`;
    const encoded: Partial<Record<Vsn, string | Uint8Array>> = {};
    for (const channel of channels) {
      const { vsn } = channel.connection;
      let frame = encoded[vsn];
      if (frame === undefined) {
        try {
          frame = encoded[vsn] = encodeBroadcast(vsn, topic, message);
        } catch (error) {
          log(`broadcast on ${row.topic} not sent: ${(error as Error).message}`);
          return;
        }
      }
      if (send(channel.connection, frame)) stats.delivered++;
    }
  }

  /** Writes a frame, unless the client stopped reading: then it is closed instead. */
  function send(connection: Connection, frame: string | Uint8Array): boolean {
    const { socket } = connection;
    if (connection.closed || socket.readyState !== WebSocket.OPEN) return false;
    if (socket.bufferedAmount > limits.maxBufferedBytes) {
      stats.closedSlow++;
      closeConnection(connection, 1013, "slow consumer");
      return false;
    }
    socket.send(frame);
    return true;
  }

  // ------------------------------------------------------------------ connections

  async function handle(request: Request): Promise<Response> {
    const url = new URL(request.url);
    if (url.pathname !== "/realtime/v1/websocket") {
      return Response.json({ error: "Not found" }, { status: 404 });
    }
    if (request.headers.get("upgrade")?.toLowerCase() !== "websocket") {
      return Response.json({ error: "Expected a WebSocket upgrade" }, { status: 400 });
    }
    const vsn = parseVsn(url.searchParams.get("vsn"));
    if (!vsn) {
      return Response.json({ error: "Unsupported protocol version (vsn)" }, { status: 400 });
    }
    // As the hosted server's connect: the key must be a valid JWT with `role` and `exp`.
    const apiKey = request.headers.get("x-api-key") ?? url.searchParams.get("apikey");
    if (!apiKey) return Response.json({ error: "API key is missing" }, { status: 401 });
    const check = await verifyToken(apiKey);
    if (!check.ok) {
      const message = check.kind === "expired" ? "Token has expired" : check.message;
      return Response.json({ error: message }, { status: 401 });
    }
    if (connections.size >= limits.maxConnections) {
      return Response.json({ error: "Too many connected users" }, { status: 429 });
    }
    // Read before the upgrade: afterwards the request is closed and its headers gone.
    const headers = forwardedHeaders(request.headers);
    const { socket, response } = Deno.upgradeWebSocket(request);
    socket.binaryType = "arraybuffer";
    const connection: Connection = {
      socket,
      vsn,
      apiKey,
      headers,
      channels: new Map(),
      lastSeen: Date.now(),
      queue: Promise.resolve(),
      closed: false,
    };
    socket.onmessage = (event: MessageEvent<string | ArrayBuffer>) => {
      connection.lastSeen = Date.now();
      const size = typeof event.data === "string" ? event.data.length : event.data.byteLength;
      if (size > limits.maxFrameBytes) {
        closeConnection(connection, 1009, "frame too large");
        return;
      }
      let frame: Frame;
      try {
        frame = decodeFrame(vsn, event.data);
      } catch {
        closeConnection(connection, 1003, "malformed frame");
        return;
      }
      // One frame at a time per connection, in order, as a Phoenix socket process handles them.
      connection.queue = connection.queue.then(() => onFrame(connection, frame)).catch(
        (error) => log(`realtime: ${(error as Error).message}`),
      );
    };
    socket.onclose = () => dropConnection(connection);
    socket.onerror = () => {};
    connections.add(connection);
    return response;
  }

  function closeConnection(connection: Connection, code: number, reason: string): void {
    dropConnection(connection);
    try {
      connection.socket.close(code, reason);
    } catch { /* already closing */ }
  }

  function dropConnection(connection: Connection): void {
    if (connection.closed) return;
    connection.closed = true;
    connections.delete(connection);
    for (const channel of connection.channels.values()) unlist(channel);
    connection.channels.clear();
  }

  function list(channel: Channel): void {
    const key = `${channel.private ? "p" : "o"}:${channel.subTopic}`;
    let set = subscribers.get(key);
    if (!set) subscribers.set(key, set = new Set());
    set.add(channel);
    channel.live = true;
  }

  function unlist(channel: Channel): void {
    clearTimeout(channel.expiry);
    if (!channel.live) return;
    channel.live = false;
    const key = `${channel.private ? "p" : "o"}:${channel.subTopic}`;
    const set = subscribers.get(key);
    set?.delete(channel);
    if (set?.size === 0) subscribers.delete(key);
  }

  // ------------------------------------------------------------------ frames

  async function onFrame(connection: Connection, frame: Frame): Promise<void> {
    if (connection.closed) return;
    const reply = (status: "ok" | "error", response: Record<string, unknown>) =>
      send(connection, encodeReply(connection.vsn, frame, status, response));
    if (frame.topic === "phoenix" && frame.event === "heartbeat") {
      reply("ok", {});
      return;
    }
    if (frame.event === "phx_join") {
      await join(connection, frame);
      return;
    }
    const channel = connection.channels.get(frame.topic);
    if (!channel || (frame.joinRef !== null && frame.joinRef !== channel.joinRef)) {
      reply("error", { reason: "unmatched topic" });
      return;
    }
    switch (frame.event) {
      case "phx_leave":
        reply("ok", {});
        closeChannel(channel);
        return;
      case "access_token":
        await refreshToken(channel, frame.payload.access_token);
        return;
      case "presence":
        // No presence here: the policies grant no presence read or write.
        reply("error", {});
        return;
      default:
        // Client broadcasts: the policies grant no insert on realtime.messages, so a private
        // channel's write is refused, silently as hosted does; anything else is ignored.
        return;
    }
  }

  async function join(connection: Connection, frame: Frame): Promise<void> {
    const reply = (status: "ok" | "error", response: Record<string, unknown>) =>
      send(connection, encodeReply(connection.vsn, frame, status, response));
    const refuse = (reason: string) => reply("error", { reason });
    if (!frame.topic.startsWith("realtime:")) {
      return void reply("error", { reason: "unmatched topic" });
    }
    const subTopic = frame.topic.slice("realtime:".length);
    if (!subTopic) return void refuse("TopicNameRequired: You must provide a topic name");

    // Phoenix closes an existing channel of the topic for the new join.
    const existing = connection.channels.get(frame.topic);
    if (existing) closeChannel(existing);

    const config = (frame.payload.config ?? {}) as Record<string, unknown>;
    const isPrivate = config.private === true;
    if (!isPrivate) return void refuse("PrivateOnly: This project only allows private channels");
    if (Array.isArray(config.postgres_changes) && config.postgres_changes.length > 0) {
      return void refuse(
        "RealtimeDisabledForConfiguration: the local Realtime server serves Broadcast from " +
          "Database on private channels only, not postgres_changes",
      );
    }
    if (connection.channels.size >= limits.channelsPerConnection) {
      return void refuse("ChannelRateLimitReached: Too many channels");
    }
    const token = joinToken(frame.payload, connection.apiKey);
    const check = await verifyToken(token);
    if (!check.ok) return void refuse(tokenReason(check));
    if (!feed.streaming && !(await feed.ready(feedWaitMs))) {
      return void refuse(
        "UnableToConnectToProject: Realtime was unable to connect to the project database",
      );
    }
    const presence = (config.presence ?? {}) as Record<string, unknown>;
    const read = await mayRead(
      subTopic,
      check.claims,
      connection.headers,
      presence.enabled === true,
    );
    if (read !== true) return void refuse(read);
    if (connection.closed) return;

    const channel: Channel = {
      connection,
      topic: frame.topic,
      subTopic,
      joinRef: frame.joinRef ?? frame.ref,
      private: true,
      token,
      claims: check.claims,
      live: false,
    };
    connection.channels.set(frame.topic, channel);
    list(channel);
    watchExpiry(channel);
    reply("ok", { postgres_changes: [] });
  }

  async function refreshToken(channel: Channel, token: unknown): Promise<void> {
    // As hosted: an `sb_` key, no token or the same token changes nothing.
    if (typeof token !== "string" || token.startsWith("sb_") || token === channel.token) return;
    const check = await verifyToken(token);
    if (!check.ok) return shutdown(channel, check.message);
    const read = await mayRead(channel.subTopic, check.claims, channel.connection.headers, false);
    // As hosted: the reason without its code ("You do not have permissions to read from ...").
    if (read !== true) return shutdown(channel, read.replace(/^[A-Za-z]+: /, ""));
    channel.token = token;
    channel.claims = check.claims;
    watchExpiry(channel);
  }

  /** Re-checks the channel's token when it expires (at most every 5 minutes, as hosted). */
  function watchExpiry(channel: Channel): void {
    clearTimeout(channel.expiry);
    const remainingMs = channel.claims.exp * 1000 - Date.now();
    channel.expiry = setTimeout(async () => {
      if (!channel.live) return;
      const check = await verifyToken(channel.token);
      if (!check.ok) shutdown(channel, check.message);
      else watchExpiry(channel);
    }, Math.max(0, Math.min(CONFIRM_TOKEN_MAX_MS, remainingMs)));
  }

  /** The hosted `shutdown_response`: a `system` error on the channel, then `phx_close`. */
  function shutdown(channel: Channel, message: string): void {
    const { connection } = channel;
    send(
      connection,
      encodePush(connection.vsn, channel.joinRef, null, channel.topic, "system", {
        extension: "system",
        status: "error",
        message,
        channel: channel.subTopic,
      }),
    );
    closeChannel(channel);
  }

  function closeChannel(channel: Channel): void {
    unlist(channel);
    const { connection } = channel;
    if (connection.channels.get(channel.topic) === channel) {
      connection.channels.delete(channel.topic);
    }
    send(
      connection,
      encodePush(connection.vsn, channel.joinRef, channel.joinRef, channel.topic, "phx_close", {}),
    );
  }

  /** The feed was lost: each channel errors (as a crashed Phoenix channel) and is rejoined. */
  function errorAll(connection: Connection): void {
    for (const channel of [...connection.channels.values()]) {
      unlist(channel);
      connection.channels.delete(channel.topic);
      send(
        connection,
        encodePush(
          connection.vsn,
          channel.joinRef,
          channel.joinRef,
          channel.topic,
          "phx_error",
          {},
        ),
      );
    }
  }

  // ------------------------------------------------------------------ authorization

  /**
   * The hosted read check: probe rows (broadcast, and presence when the join enables it) inserted
   * with the topic, selected back as the token's role with its claims and `realtime.topic` set,
   * and rolled back. True when one is seen, else the refusal's reason.
   */
  async function mayRead(
    subTopic: string,
    claims: Claims,
    headers: Record<string, string>,
    presence: boolean,
  ): Promise<true | string> {
    const unauthorized =
      `Unauthorized: You do not have permissions to read from this Channel topic: ${subTopic}`;
    if (!API_ROLES.has(claims.role)) return unauthorized;
    const probes = [
      { id: crypto.randomUUID(), extension: "broadcast" },
      ...(presence ? [{ id: crypto.randomUUID(), extension: "presence" }] : []),
    ];
    const seen = new Rollback();
    try {
      await sql.begin(async (tx) => {
        for (const probe of probes) {
          await tx`insert into realtime.messages (id, topic, extension)
                   values (${probe.id}, ${subTopic}, ${probe.extension})`;
        }
        await tx`select
          set_config('role', ${claims.role}, true),
          set_config('realtime.topic', ${subTopic}, true),
          set_config('request.jwt.claims', ${JSON.stringify(claims)}, true),
          set_config('request.jwt.claim.sub', ${claims.sub ?? ""}, true),
          set_config('request.jwt.claim.role', ${claims.role}, true),
          set_config('request.headers', ${JSON.stringify(headers)}, true)`;
        const rows = await tx<{ id: string }[]>`
          select id from realtime.messages where id in ${tx(probes.map((p) => p.id))}`;
        seen.count = rows.length;
        throw seen;
      });
    } catch (error) {
      if (error !== seen) {
        const code = (error as { code?: string }).code;
        if (code === "23514") {
          return "MissingPartition: Realtime was unable to find the expected messages partition";
        }
        if (code === undefined || /^(08|57P)/.test(code)) {
          return "UnableToConnectToProject: Realtime was unable to connect to the project database";
        }
        // Any other database error in the policies: hosted answers it as unauthorized.
        log(`realtime: a policy check on ${subTopic} failed: ${(error as Error).message}`);
        return unauthorized;
      }
    }
    return seen.count > 0 ? true : unauthorized;
  }

  // ------------------------------------------------------------------ tokens

  async function verifyToken(token: string): Promise<TokenCheck> {
    let payload: Record<string, unknown>;
    try {
      ({ payload } = await jwtVerify(token, secret, { algorithms: ["HS256"] }));
    } catch (error) {
      if (error instanceof errors.JWTExpired) {
        const exp = Number(decodeJwt(token).exp);
        const ago = Math.max(0, Math.floor(Date.now() / 1000) - exp);
        return { ok: false, kind: "expired", message: `Token has expired ${ago} seconds ago` };
      }
      if (
        error instanceof errors.JWSSignatureVerificationFailed ||
        error instanceof errors.JOSEAlgNotAllowed
      ) {
        return { ok: false, kind: "signature", message: "Failed to validate JWT signature" };
      }
      return { ok: false, kind: "malformed", message: "The token provided is not a valid JWT" };
    }
    if (typeof payload.role !== "string" || typeof payload.exp !== "number") {
      return { ok: false, kind: "claims", message: "Fields `role` and `exp` are required in JWT" };
    }
    return { ok: true, claims: payload as Claims };
  }

  return {
    ok: true,
    server: {
      handle,
      stats: () => ({
        connections: connections.size,
        channels: [...subscribers.values()].reduce((sum, set) => sum + set.size, 0),
        streaming: feed.streaming,
        ...stats,
      }),
      async close() {
        clearInterval(janitor);
        clearInterval(sweeper);
        for (const connection of [...connections]) closeConnection(connection, 1001, "going away");
        await feed.close();
        await sql.end({ timeout: 2 });
      },
    },
  };
}

class Rollback {
  count = 0;
}

/** The join's token: `access_token` (or `user_token`), an `sb_` key meaning the socket's key. */
function joinToken(payload: Record<string, unknown>, apiKey: string): string {
  const token = payload.access_token ?? payload.user_token;
  return typeof token === "string" && !token.startsWith("sb_") ? token : apiKey;
}

function tokenReason(check: Extract<TokenCheck, { ok: false }>): string {
  switch (check.kind) {
    case "expired":
    case "claims":
      return `InvalidJWTToken: ${check.message}`;
    case "signature":
      return `JwtSignatureError: ${check.message}`;
    case "malformed":
      return `MalformedJWT: ${check.message}`;
  }
}

/** The `x-` headers the hosted server hands to policies as `request.headers`. */
function forwardedHeaders(headers: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of headers) {
    if (name.startsWith("x-") && name !== "x-api-key") out[name] = value;
  }
  return out;
}
