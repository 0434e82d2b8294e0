/**
 * `deno task start`: the local stack (local/stack.ts) on http://127.0.0.1:$PORT, the addresses it
 * answers at printed as `supabase start` prints them; Ctrl-C (or SIGTERM) stops it in order.
 */
import { type StackAddresses, startStack } from "../local/stack.ts";

const say = (line: string) => console.log(`[start] ${line}`);

const stack = await startStack(say, printAddresses).catch((error: Error) => {
  // What stops the stack from starting is said in a sentence, not a stack trace.
  console.error(`[start] cannot start: ${error.message}`);
  Deno.exit(1);
});
Deno.addSignalListener("SIGINT", () => stack.shutdown("SIGINT"));
Deno.addSignalListener("SIGTERM", () => stack.shutdown("SIGTERM"));

function printAddresses(at: StackAddresses): void {
  const origin = `http://127.0.0.1:${at.port}`;
  const base = `${origin}/functions/v1`;
  say(`Dashboard URL: ${origin}/` + (at.dataApi ? "" : " (needs the Data API)"));
  say(`API URL:       ${origin}`);
  say(`REST URL:      ${origin}/rest/v1` + (at.dataApi ? "" : " (not running)"));
  say(`Auth URL:      ${origin}/auth/v1 (local sign-in: demo@example.test)`);
  say(
    `Realtime URL:  ws://127.0.0.1:${at.port}/realtime/v1/websocket` +
      (at.realtime ? "" : " (not running)"),
  );
  say(
    `DB URL:        ${redactPassword(at.databaseUrl)}` +
      (at.databaseFiles ? ` (files: ${at.databaseFiles})` : ""),
  );
  if (at.dataApi) {
    say(`anon key:      ${at.dataApi.anon}`);
    say(`service_role key: ${at.dataApi.serviceRole}`);
  }
  say(`vm-api:        ${base}/vm-api`);
  say(`vm-reporter:   ${base}/vm-reporter/<route>`);
  say(`webhooks:      ${base}/webhooks`);
  say(`approval-links: ${base}/approval-links`);
  say(
    at.mail
      ? `Mail URL:      ${at.mail.webUrl} (every email the stack sends; SMTP ${at.mail.smtpUrl})`
      : `SMTP:          ${at.smtpUrl} (SMTP_URL)`,
  );
  say(`vm-reconciler: ${base}/vm-reconciler (also running every ${at.reconcileIntervalMs} ms)`);
  if (at.githubDemo) {
    say(`GitHub URL:    ${new URL("/", at.githubDemo).href} (the stack's GitHub stand-in)`);
    say(`demo repository: ${at.githubDemo} (a project naming it gets pull requests)`);
  }
  say(`compute driver: ${at.computeDriver}`);
  say(`ready: ${origin} (Ctrl-C stops)`);
}

function redactPassword(url: string): string {
  const parsed = new URL(url);
  if (parsed.password) parsed.password = "***";
  return parsed.href;
}
