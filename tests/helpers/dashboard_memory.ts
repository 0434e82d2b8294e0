/**
 * A dashboard client for the tests that render areas without a browser (tests/dashboard/): its
 * fetch answers vm-api and the Data API from memory and records every request, so a test sees
 * exactly what the dashboard sent and what it made of the answer.
 */
import { createDashboardClient, type DashboardClient } from "../../supabase/client/dashboard.ts";

export interface RecordedRequest {
  method: string;
  /** `/functions/v1/vm-api`, `/rest/v1/<table>`, ... */
  path: string;
  /** A POST's JSON body; null for a read. */
  body: Record<string, unknown> | null;
  /** The query string, decoded. */
  query: string;
}

/** What the memory answers: a JSON body, 200 unless a status is given. */
export interface MemoryAnswer {
  status?: number;
  body: unknown;
}

export function memoryClient(
  answer: (request: RecordedRequest) => MemoryAnswer,
): { client: DashboardClient; calls: RecordedRequest[] } {
  const calls: RecordedRequest[] = [];
  const client = createDashboardClient("http://api.test", "anon", {
    auth: { persistSession: false, autoRefreshToken: false, detectSessionInUrl: false },
    global: {
      fetch: async (input: string | URL | Request, init?: RequestInit) => {
        const request = input instanceof Request ? input : new Request(String(input), init);
        const url = new URL(request.url);
        const text = request.method === "POST" ? await request.text() : "";
        const recorded = {
          method: request.method,
          path: url.pathname,
          body: text ? JSON.parse(text) as Record<string, unknown> : null,
          query: decodeURIComponent(url.search),
        };
        calls.push(recorded);
        const { status = 200, body } = answer(recorded);
        return new Response(JSON.stringify(body), {
          status,
          headers: { "content-type": "application/json" },
        });
      },
    },
  });
  return { client, calls };
}
