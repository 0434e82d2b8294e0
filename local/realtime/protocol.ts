/**
 * The Phoenix channels wire format as Supabase Realtime speaks it, both versions realtime-js
 * offers (its `vsn` option):
 *
 * - **1.0.0** (Phoenix.Socket.V1.JSONSerializer): every frame a JSON object. The server writes
 *   `{"topic","event","payload","ref"}` (no `join_ref`); a broadcast is
 *   `{"topic","event":"broadcast","payload":{"event","payload","type":"broadcast","meta":{"id"}},"ref":null}`.
 * - **2.0.0** (RealtimeWeb.Socket.V2Serializer): text frames are JSON arrays
 *   `[join_ref, ref, topic, event, payload]`; a broadcast from the database is a binary frame,
 *   the "user broadcast" realtime-js's serializer decodes (kind 4):
 *   `kind(1) topic_size(1) event_size(1) metadata_size(1) encoding(1) topic event metadata payload`,
 *   metadata `{"id": <message id>}`, encoding 1 (JSON) with the payload's JSON text. Clients send
 *   text arrays, and broadcasts as "user broadcast push" binary frames (kind 3), decoded here.
 */

export type Vsn = "1.0.0" | "2.0.0";

export interface Frame {
  joinRef: string | null;
  ref: string | null;
  topic: string;
  event: string;
  payload: Record<string, unknown>;
}

/** A broadcast to send: the message's event, its payload's JSON text and its id. */
export interface Broadcast {
  event: string;
  payload: string;
  id: string;
}

const KIND_PUSH = 0;
const KIND_USER_BROADCAST_PUSH = 3;
const KIND_USER_BROADCAST = 4;
const JSON_ENCODING = 1;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Which serializer a `vsn` query parameter asks for (Phoenix: none means 1.0.0). */
export function parseVsn(value: string | null): Vsn | undefined {
  if (value === null || /^1\.\d+\.\d+$/.test(value)) return "1.0.0";
  if (/^2\.\d+\.\d+$/.test(value)) return "2.0.0";
  return undefined;
}

/** A client's frame; throws on anything that is not one. */
export function decodeFrame(vsn: Vsn, data: string | ArrayBuffer): Frame {
  if (typeof data !== "string") {
    if (vsn !== "2.0.0") throw new Error("binary frames need vsn 2.0.0");
    return decodeBinary(new Uint8Array(data));
  }
  const parsed: unknown = JSON.parse(data);
  if (vsn === "2.0.0") {
    if (!Array.isArray(parsed) || parsed.length < 5) throw new Error("expected a V2 array");
    const [joinRef, ref, topic, event, payload] = parsed;
    return frame(joinRef, ref, topic, event, payload);
  }
  if (typeof parsed !== "object" || parsed === null) throw new Error("expected a V1 object");
  const { join_ref, ref, topic, event, payload } = parsed as Record<string, unknown>;
  return frame(join_ref, ref, topic, event, payload);
}

function frame(joinRef: unknown, ref: unknown, topic: unknown, event: unknown, payload: unknown) {
  if (typeof topic !== "string" || typeof event !== "string") {
    throw new Error("a frame needs a topic and an event");
  }
  return {
    joinRef: refText(joinRef),
    ref: refText(ref),
    topic,
    event,
    payload: typeof payload === "object" && payload !== null && !Array.isArray(payload)
      ? payload as Record<string, unknown>
      : {},
  };
}

function refText(value: unknown): string | null {
  return typeof value === "string" ? value : typeof value === "number" ? String(value) : null;
}

function decodeBinary(bytes: Uint8Array): Frame {
  const kind = bytes[0];
  if (kind === KIND_USER_BROADCAST_PUSH) {
    const sizes = [bytes[1]!, bytes[2]!, bytes[3]!, bytes[4]!, bytes[5]!];
    const encoding = bytes[6];
    let at = 7;
    const [joinRef, ref, topic, event, metadata] = sizes.map((size) => {
      const text = decoder.decode(bytes.subarray(at, at + size));
      at += size;
      return text;
    }) as [string, string, string, string, string];
    const body = bytes.subarray(at);
    return {
      joinRef: joinRef || null,
      ref: ref || null,
      topic,
      event: "broadcast",
      payload: {
        type: "broadcast",
        event,
        payload: encoding === JSON_ENCODING ? JSON.parse(decoder.decode(body)) : body,
        ...(metadata ? { meta: JSON.parse(metadata) } : {}),
      },
    };
  }
  if (kind === KIND_PUSH) {
    const [joinRefSize, topicSize, eventSize] = [bytes[1]!, bytes[2]!, bytes[3]!];
    let at = 4;
    const take = (size: number) => decoder.decode(bytes.subarray(at, at += size));
    const joinRef = take(joinRefSize);
    const topic = take(topicSize);
    const event = take(eventSize);
    return { joinRef: joinRef || null, ref: null, topic, event, payload: {} };
  }
  throw new Error(`unknown binary frame kind ${kind}`);
}

/** A reply to a client's frame (`phx_reply`). */
export function encodeReply(
  vsn: Vsn,
  to: Pick<Frame, "joinRef" | "ref" | "topic">,
  status: "ok" | "error",
  response: Record<string, unknown>,
): string {
  const payload = { status, response };
  return vsn === "2.0.0"
    ? JSON.stringify([to.joinRef, to.ref, to.topic, "phx_reply", payload])
    : JSON.stringify({ topic: to.topic, event: "phx_reply", payload, ref: to.ref });
}

/** A message the server pushes on a channel (`system`, `phx_close`, `phx_error`). */
export function encodePush(
  vsn: Vsn,
  joinRef: string | null,
  ref: string | null,
  topic: string,
  event: string,
  payload: Record<string, unknown>,
): string {
  return vsn === "2.0.0"
    ? JSON.stringify([joinRef, ref, topic, event, payload])
    : JSON.stringify({ topic, event, payload, ref });
}

/** A broadcast from the database to the joined `topic` (`realtime:<sub topic>`). */
export function encodeBroadcast(vsn: Vsn, topic: string, message: Broadcast): string | Uint8Array {
  const metadata = JSON.stringify({ id: message.id });
  if (vsn === "1.0.0") {
    // The payload's JSON text goes in as it is: it is JSON already.
    return `{"topic":${JSON.stringify(topic)},"event":"broadcast","payload":{"event":${
      JSON.stringify(message.event)
    },"payload":${message.payload},"type":"broadcast","meta":${metadata}},"ref":null}`;
  }
  const topicBytes = encoder.encode(topic);
  const eventBytes = encoder.encode(message.event);
  const metadataBytes = encoder.encode(metadata);
  const payloadBytes = encoder.encode(message.payload);
  for (const [name, field] of [["topic", topicBytes], ["event", eventBytes]] as const) {
    if (field.length > 255) throw new Error(`the broadcast's ${name} is longer than 255 bytes`);
  }
  const header = 5;
  const out = new Uint8Array(
    header + topicBytes.length + eventBytes.length + metadataBytes.length + payloadBytes.length,
  );
  out[0] = KIND_USER_BROADCAST;
  out[1] = topicBytes.length;
  out[2] = eventBytes.length;
  out[3] = metadataBytes.length;
  out[4] = JSON_ENCODING;
  let at = header;
  for (const part of [topicBytes, eventBytes, metadataBytes, payloadBytes]) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}
