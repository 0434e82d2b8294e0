/**
 * A webhook receiver on 127.0.0.1, as a customer runs one: every delivery is verified with the
 * reference implementation of Standard Webhooks (the `standardwebhooks` npm package), against each
 * secret the test says is valid, and kept. What it answers is the test's to choose (a failure for
 * the first attempts, 410, ...); a delivery no secret verifies is answered 401 and kept as such.
 */
import { Webhook } from "standardwebhooks";

export interface Delivery {
  id: string;
  type: string;
  timestamp: string;
  // deno-lint-ignore no-explicit-any
  data: any;
  /** Which of the secrets given verified its signature. */
  verifiedWith: string[];
  /** How many times this webhook-id had arrived, this one included. */
  arrival: number;
}

export interface Receiver extends AsyncDisposable {
  url: string;
  deliveries: Delivery[];
  /** Deliveries whose signature no secret verified. */
  unverified: number;
  secrets: string[];
  /** What to answer a verified delivery (default 204). */
  answer: (delivery: Delivery) => number;
  ofType(type: string): Delivery[];
}

export function startReceiver(path = "/hook"): Receiver {
  const arrivals = new Map<string, number>();
  const receiver: Receiver = {
    url: "",
    deliveries: [],
    unverified: 0,
    secrets: [],
    answer: () => 204,
    ofType: (type) => receiver.deliveries.filter((d) => d.type === type),
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    const body = await request.text();
    const headers = Object.fromEntries(request.headers);
    const verifiedWith = receiver.secrets.filter((secret) => {
      try {
        new Webhook(secret).verify(body, headers);
        return true;
      } catch {
        return false;
      }
    });
    if (verifiedWith.length === 0) {
      receiver.unverified++;
      return new Response(null, { status: 401 });
    }
    const id = headers["webhook-id"]!;
    const arrival = (arrivals.get(id) ?? 0) + 1;
    arrivals.set(id, arrival);
    const parsed = JSON.parse(body);
    const delivery = { id, ...parsed, verifiedWith, arrival } as Delivery;
    receiver.deliveries.push(delivery);
    return new Response(null, { status: receiver.answer(delivery) });
  });
  receiver.url = `http://127.0.0.1:${server.addr.port}${path}`;
  return receiver;
}
