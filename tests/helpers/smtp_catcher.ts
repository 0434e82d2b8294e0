/**
 * An SMTP server on 127.0.0.1 that keeps every email it accepts, parsed (smtp-server and
 * mailparser, the SMTP server and MIME parser of the nodemailer project), as a mail provider would
 * receive them. It can refuse the next messages with a temporary failure (451), to see the sender
 * retry, and it checks the credentials it is given.
 */
// @ts-types="./smtp_server.d.ts"
import { SMTPServer } from "smtp-server";
// @ts-types="./mailparser.d.ts"
import { simpleParser } from "mailparser";

export interface CaughtEmail {
  to: string;
  from: string;
  subject: string;
  text: string;
  html: string;
  /** The SMTP user it was sent as, if the sender logged in. */
  user: string | undefined;
}

export interface SmtpCatcher extends AsyncDisposable {
  /** smtp://user:password@127.0.0.1:port, as SMTP_URL. */
  url: string;
  emails: CaughtEmail[];
  /** Messages refused so far (451). */
  refused: number;
  /** Refuses this many of the next messages with 451 (a temporary failure). */
  failNext: number;
  /** Emails to `address`. */
  to(address: string): CaughtEmail[];
}

export async function startSmtpCatcher(
  credentials = { user: "mailer", password: "s3cret-smtp-pa55word" },
): Promise<SmtpCatcher> {
  const catcher: SmtpCatcher = {
    url: "",
    emails: [],
    refused: 0,
    failNext: 0,
    to: (address) => catcher.emails.filter((e) => e.to === address),
    [Symbol.asyncDispose]: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
  const server = new SMTPServer({
    disabledCommands: ["STARTTLS"],
    allowInsecureAuth: true,
    authOptional: true,
    logger: false,
    onAuth(auth, _session, callback) {
      if (auth.username === credentials.user && auth.password === credentials.password) {
        callback(null, { user: auth.username });
      } else {
        callback(new Error("Invalid username or password"));
      }
    },
    onData(stream, session, callback) {
      simpleParser(stream).then((parsed) => {
        if (catcher.failNext > 0) {
          catcher.failNext--;
          catcher.refused++;
          const error = new Error("Try again later") as Error & { responseCode: number };
          error.responseCode = 451;
          callback(error);
          return;
        }
        const to = session.envelope.rcptTo.map((r) => r.address);
        for (const address of to) {
          catcher.emails.push({
            to: address,
            from: session.envelope.mailFrom ? session.envelope.mailFrom.address : "",
            subject: parsed.subject ?? "",
            text: parsed.text ?? "",
            html: typeof parsed.html === "string" ? parsed.html : "",
            user: typeof session.user === "string" ? session.user : undefined,
          });
        }
        callback();
      }, (error) => callback(error as Error));
    },
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const { port } = server.server.address() as { port: number };
  catcher.url = `smtp://${credentials.user}:${encodeURIComponent(credentials.password)}` +
    `@127.0.0.1:${port}`;
  return catcher;
}
