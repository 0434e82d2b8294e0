/**
 * The local stack's mail catcher (never deployed), as `supabase start` runs one: MailDev (the npm
 * package `maildev`, 3.x, which runs under Deno's Node compatibility) takes every email the
 * functions send over SMTP and shows it on a web page, so the demo user's notifications and their
 * approval links can be read and followed locally. Its mail is kept in a directory of its own
 * for the life of the process. With `deno task start`'s default port the page is on 54324 and
 * SMTP on 54325 (the Supabase CLI's Inbucket ports); with port 0, on free ports.
 */
import { MailDev } from "maildev";

export interface MailCatcher {
  /** What the functions send to: SMTP_URL. */
  smtpUrl: string;
  /** The web page that lists what arrived. */
  webUrl: string;
  stop(): Promise<void>;
}

interface Address {
  host: string;
  port: number;
}

export async function startMailCatcher(
  ports: { web: number; smtp: number },
): Promise<MailCatcher> {
  const mailDirectory = await Deno.makeTempDir({ prefix: "vm-service-mail-" });
  const maildev = new MailDev({
    smtp: ports.smtp,
    web: ports.web,
    ip: "127.0.0.1",
    webIp: "127.0.0.1",
    silent: true,
    mailDirectory,
  });
  const servers = await maildev.start() as unknown as {
    smtp: { getAddress(): Address };
    api: { getAddress(): Address | null };
  };
  const smtp = servers.smtp.getAddress();
  const web = servers.api.getAddress() ?? { host: "127.0.0.1", port: ports.web };
  return {
    smtpUrl: `smtp://127.0.0.1:${smtp.port}`,
    webUrl: `http://127.0.0.1:${web.port}/`,
    async stop() {
      await maildev.stop().catch(() => {});
      await Deno.remove(mailDirectory, { recursive: true }).catch(() => {});
    },
  };
}

/** The catcher's ports for the stack's port: the Supabase CLI's layout, or free ones for 0. */
export function mailCatcherPorts(stackPort: number): { web: number; smtp: number } {
  return stackPort === 0 ? { web: 0, smtp: 0 } : { web: stackPort + 3, smtp: stackPort + 4 };
}
