/**
 * Serves the edge functions the way the Supabase CLI's local stack routes them:
 * `/functions/v1/<name>` and everything below it goes to that function's handler.
 */
import { json } from "../../supabase/functions/_shared/http.ts";

export type Handler = (request: Request) => Response | Promise<Response>;

export function routeFunctions(functions: Record<string, Handler>): Handler {
  return (request) => {
    const [, prefix, version, name] = new URL(request.url).pathname.split("/");
    const handler = prefix === "functions" && version === "v1" && name !== undefined
      ? functions[name]
      : undefined;
    if (!handler) return json({ error: "Function not found" }, 404);
    return handler(request);
  };
}
