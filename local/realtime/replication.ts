/**
 * The local Realtime server's feed: `realtime.messages` read by logical replication, as the hosted
 * server reads it (Realtime.Tenants.ReplicationConnection): the publication
 * `supabase_realtime_messages_publication` for the table, a TEMPORARY replication slot with the
 * `pgoutput` plugin, and every inserted row handed on once its transaction commits. A temporary
 * slot lives as long as its connection, so what commits while the feed is down is not replayed:
 * clients refetch when they are subscribed again (docs/dashboard.md), and the server errors its
 * channels when the feed is lost so that they do.
 *
 * The connection is postgres.js's own replication mode (the startup parameter
 * `replication=database`, `CREATE_REPLICATION_SLOT` and `START_REPLICATION` as a CopyBoth stream),
 * the same machinery as its `subscribe()`; the few pgoutput messages the table needs (Relation,
 * Insert) are decoded here, and the connection is supervised here: `subscribe()` re-creates its
 * slot from an un-awaited close callback, so a database that is down at that moment ends its feed
 * for good with an unhandled rejection, which stops a Deno process.
 */
import postgres from "postgres";

export const PUBLICATION = "supabase_realtime_messages_publication";

/** One row of `realtime.messages` as it was committed. */
export interface MessageRow {
  id: string;
  topic: string;
  event: string;
  extension: string;
  private: boolean;
  /** The `payload` column's JSON text, as PostgreSQL wrote it (never parsed on the way). */
  payload: string;
  /** `inserted_at`, PostgreSQL's text (a timestamp without time zone). */
  insertedAt: string;
}

export interface ReplicationFeed {
  /** True while the slot exists and the stream runs: every commit from now on is delivered. */
  readonly streaming: boolean;
  /** Resolves true once streaming, false after `timeoutMs` without it. */
  ready(timeoutMs: number): Promise<boolean>;
  close(): Promise<void>;
}

export interface ReplicationOptions {
  databaseUrl: string;
  onMessage(row: MessageRow): void;
  /** Streaming started (true) or was lost (false, with the reason). */
  onState?(streaming: boolean, reason?: string): void;
  log?(line: string): void;
}

/**
 * Why this database cannot feed Realtime, in one sentence saying what to set, or undefined when
 * it can (`wal_level=logical` and a role that may replicate).
 */
export async function logicalReplicationProblem(sql: postgres.Sql): Promise<string | undefined> {
  const [row] = await sql<[{ wal_level: string; may_replicate: boolean }]>`
    select current_setting('wal_level') as wal_level,
           (select rolreplication or rolsuper from pg_catalog.pg_roles
            where rolname = current_user) as may_replicate`;
  if (row.wal_level !== "logical") {
    return `this database runs with wal_level=${row.wal_level}: set wal_level = logical ` +
      "(ALTER SYSTEM SET wal_level = logical, then restart PostgreSQL) to serve Realtime";
  }
  if (!row.may_replicate) {
    return "the role of DATABASE_URL may not replicate: grant it REPLICATION (ALTER ROLE ... " +
      "WITH REPLICATION) to serve Realtime";
  }
  return undefined;
}

/** The publication the hosted server creates on connect, when it is missing. */
export async function ensurePublication(sql: postgres.Sql): Promise<void> {
  try {
    await sql.unsafe(`
      do $$
      begin
        if not exists (select 1 from pg_catalog.pg_publication where pubname = '${PUBLICATION}') then
          create publication ${PUBLICATION} for table realtime.messages;
        end if;
      end
      $$`);
  } catch (error) {
    // Another server made it between the check and the create.
    if ((error as { code?: string }).code !== "42710") throw error;
  }
}

const RETRY_MS = [250, 500, 1000, 2000, 5000];
const FEEDBACK_INTERVAL_MS = 10_000;
/** Microseconds between the Unix epoch and PostgreSQL's (2000-01-01). */
const PG_EPOCH_US = 946_684_800_000_000n;

export function startReplicationFeed(options: ReplicationOptions): ReplicationFeed {
  const log = options.log ?? (() => {});
  const slot = `supabase_realtime_messages_replication_slot_${
    crypto.randomUUID().replaceAll("-", "").slice(0, 12)
  }`;
  let streaming = false;
  let closed = false;
  let current: { sql: postgres.Sql; stream?: Duplex } | undefined;
  let waiters: Array<(ok: boolean) => void> = [];
  let wake: (() => void) | undefined;

  const setStreaming = (value: boolean, reason?: string) => {
    if (streaming === value) return;
    streaming = value;
    options.onState?.(value, reason);
    if (value) {
      for (const resolve of waiters) resolve(true);
      waiters = [];
    }
  };

  const loop = (async () => {
    let failures = 0;
    let lastProblem = "";
    while (!closed) {
      const ended = await runSession(
        options.databaseUrl,
        slot,
        (session) => (current = session),
        () => {
          failures = 0;
          if (lastProblem) log("the replication feed is back");
          lastProblem = "";
          setStreaming(true);
        },
        options.onMessage,
      ).then(() => "the replication stream ended", (error) => describe(error));
      current = undefined;
      setStreaming(false, ended);
      if (closed) break;
      if (ended !== lastProblem) log(`replication feed lost (${ended}); reconnecting`);
      lastProblem = ended;
      const delay = RETRY_MS[Math.min(failures++, RETRY_MS.length - 1)]!;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, delay);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  })();

  return {
    get streaming() {
      return streaming;
    },
    ready(timeoutMs) {
      if (streaming) return Promise.resolve(true);
      return new Promise((resolve) => {
        const timer = setTimeout(() => {
          waiters = waiters.filter((w) => w !== done);
          resolve(false);
        }, timeoutMs);
        const done = (ok: boolean) => {
          clearTimeout(timer);
          resolve(ok);
        };
        waiters.push(done);
      });
    },
    async close() {
      closed = true;
      wake?.();
      const session = current;
      session?.stream?.destroy();
      await session?.sql.end({ timeout: 1 }).catch(() => {});
      await loop;
      for (const resolve of waiters) resolve(false);
      waiters = [];
    },
  };
}

/** The slice of node:stream's Duplex the CopyBoth stream is used through. */
interface Duplex {
  on(event: "data", listener: (chunk: Uint8Array) => void): unknown;
  on(event: "error", listener: (error: Error) => void): unknown;
  on(event: "close" | "end", listener: () => void): unknown;
  write(chunk: Uint8Array): boolean;
  destroy(error?: Error): unknown;
}

/** One replication connection, from slot to end; rejects with what ended it. */
async function runSession(
  databaseUrl: string,
  slot: string,
  register: (session: { sql: postgres.Sql; stream?: Duplex }) => void,
  onStreaming: () => void,
  onMessage: (row: MessageRow) => void,
): Promise<void> {
  const sql = postgres(databaseUrl, {
    max: 1,
    fetch_types: false,
    idle_timeout: 0,
    max_lifetime: null,
    connect_timeout: 5,
    onnotice: () => {},
    connection: { replication: "database", application_name: "realtime_replication_connection" },
  });
  const session: { sql: postgres.Sql; stream?: Duplex } = { sql };
  register(session);
  let feedback: ReturnType<typeof setInterval> | undefined;
  try {
    const [created] = await sql.unsafe<[{ consistent_point: string }]>(
      `CREATE_REPLICATION_SLOT ${slot} TEMPORARY LOGICAL pgoutput NOEXPORT_SNAPSHOT`,
    );
    const stream = await sql.unsafe(
      `START_REPLICATION SLOT ${slot} LOGICAL ${created.consistent_point} ` +
        `(proto_version '1', publication_names '${PUBLICATION}')`,
    ).writable() as unknown as Duplex;
    session.stream = stream;
    const decoder = new PgOutputDecoder(onMessage);
    let received = parseLsn(created.consistent_point);
    const acknowledge = (reply: boolean) => stream.write(standbyStatus(received, reply));
    await new Promise<void>((_resolve, reject) => {
      stream.on("data", (chunk) => {
        const view = new DataView(chunk.buffer, chunk.byteOffset, chunk.byteLength);
        if (chunk[0] === 0x77 /* w: XLogData */) {
          const walStart = view.getBigUint64(1);
          if (walStart > received) received = walStart;
          decoder.decode(chunk.subarray(25));
        } else if (chunk[0] === 0x6b /* k: keepalive */) {
          const walEnd = view.getBigUint64(1);
          if (walEnd > received) received = walEnd;
          if (chunk[17]) acknowledge(false);
        }
      });
      stream.on("error", reject);
      stream.on("close", () => reject(new Error("the replication stream closed")));
      feedback = setInterval(() => acknowledge(false), FEEDBACK_INTERVAL_MS);
      onStreaming();
    });
  } finally {
    clearInterval(feedback);
    await sql.end({ timeout: 1 }).catch(() => {});
  }
}

/** A Standby Status Update: written, flushed and applied up to `lsn`. */
function standbyStatus(lsn: bigint, reply: boolean): Uint8Array {
  const message = new Uint8Array(34);
  const view = new DataView(message.buffer);
  message[0] = 0x72; // r
  view.setBigUint64(1, lsn);
  view.setBigUint64(9, lsn);
  view.setBigUint64(17, lsn);
  view.setBigInt64(25, BigInt(Date.now()) * 1000n - PG_EPOCH_US);
  message[33] = reply ? 1 : 0;
  return message;
}

function parseLsn(text: string): bigint {
  const [high, low] = text.split("/");
  return (BigInt(`0x${high}`) << 32n) + BigInt(`0x${low}`);
}

interface Relation {
  wanted: boolean;
  columns: string[];
}

/**
 * pgoutput, protocol version 1, as far as an insert-only table needs: Relation messages name the
 * columns, Insert messages carry the new row in text. Begin, Commit, Type, Origin, Update, Delete
 * and Truncate are skipped. Only `realtime.messages` and its partitions are handed on (without
 * `publish_via_partition_root` each partition is a relation of its own, as hosted).
 */
export class PgOutputDecoder {
  #relations = new Map<number, Relation>();
  #text = new TextDecoder();

  constructor(private readonly onMessage: (row: MessageRow) => void) {}

  decode(message: Uint8Array): void {
    const view = new DataView(message.buffer, message.byteOffset, message.byteLength);
    if (message[0] === 0x52 /* R */) this.#relation(message, view);
    else if (message[0] === 0x49 /* I */) this.#insert(message, view);
  }

  #relation(message: Uint8Array, view: DataView): void {
    const id = view.getUint32(1);
    let at = 5;
    const [namespace, afterNamespace] = this.#cstring(message, at);
    const [name, afterName] = this.#cstring(message, afterNamespace);
    at = afterName + 1; // replica identity
    const count = view.getUint16(at);
    at += 2;
    const columns: string[] = [];
    for (let i = 0; i < count; i++) {
      const [column, next] = this.#cstring(message, at + 1); // flags first
      columns.push(column);
      at = next + 8; // type oid, type modifier
    }
    this.#relations.set(id, {
      wanted: namespace === "realtime" && name.startsWith("messages"),
      columns,
    });
  }

  #insert(message: Uint8Array, view: DataView): void {
    const relation = this.#relations.get(view.getUint32(1));
    if (!relation?.wanted) return;
    let at = 6; // relation id, 'N'
    const count = view.getUint16(at);
    at += 2;
    const row: Record<string, string | null> = {};
    for (let i = 0; i < count; i++) {
      const kind = message[at++];
      const column = relation.columns[i] ?? `#${i}`;
      if (kind === 0x74 /* t */) {
        const length = view.getUint32(at);
        at += 4;
        row[column] = this.#text.decode(message.subarray(at, at + length));
        at += length;
      } else {
        row[column] = null; // n: null; u: unchanged TOAST (never on an insert)
      }
    }
    const { id, topic, event, extension, payload, inserted_at: insertedAt } = row;
    if (!id || !topic || !event || !payload || !insertedAt) return;
    this.onMessage({
      id,
      topic,
      event,
      extension: extension ?? "",
      private: row.private === "t",
      payload,
      insertedAt,
    });
  }

  #cstring(message: Uint8Array, at: number): [string, number] {
    const end = message.indexOf(0, at);
    return [this.#text.decode(message.subarray(at, end)), end + 1];
  }
}

function describe(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.split("\n")[0] ?? message;
}
