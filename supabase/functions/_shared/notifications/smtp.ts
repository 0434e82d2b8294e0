/**
 * Sending one email through SMTP_URL with nodemailer (the Node.js SMTP client most projects use,
 * maintained since 2010; it runs under Deno's node:net and node:tls). `smtps://` is TLS from the
 * first byte (port 465 by default: hosted Edge Functions refuse outbound 25 and 587), `smtp://`
 * upgrades with STARTTLS when the server offers it (port 587 by default). The password is a
 * secret: nodemailer logs nothing here, and any error text that could carry it is redacted before
 * it reaches a log line or the database.
 */
// @ts-types="./nodemailer.d.ts"
import nodemailer from "nodemailer";

export interface Email {
  to: string;
  subject: string;
  text: string;
  html: string;
}

export interface Mailer {
  /** Sends one email; rejects with an error whose message holds no credential. */
  send(email: Email): Promise<void>;
  /** `smtps://user:***@host:465`: the URL as it may be printed. */
  readonly redactedUrl: string;
}

export interface MailerOptions {
  /** Connect, greeting and each command's timeout (the email's lease outlasts it). */
  timeoutMs?: number;
  /** Extra certificate authorities (PEM) for the server's certificate: tests' own CA. */
  ca?: string;
}

export function createMailer(smtpUrl: string, from: string, options: MailerOptions = {}): Mailer {
  const url = new URL(smtpUrl);
  const secure = url.protocol === "smtps:";
  const user = decodeURIComponent(url.username);
  const pass = decodeURIComponent(url.password);
  const timeout = options.timeoutMs ?? 15_000;
  const transport = nodemailer.createTransport({
    host: url.hostname.replace(/^\[(.*)\]$/, "$1"),
    port: url.port ? Number(url.port) : secure ? 465 : 587,
    secure,
    ...(user ? { auth: { user, pass } } : {}),
    connectionTimeout: timeout,
    greetingTimeout: timeout,
    socketTimeout: timeout,
    logger: false,
    debug: false,
    ...(options.ca ? { tls: { ca: options.ca } } : {}),
  });
  const redact = (text: string) => redactSecret(text, [pass, url.password]);
  return {
    redactedUrl: redactSmtpUrl(smtpUrl),
    async send(email) {
      try {
        await transport.sendMail({ from, ...email });
      } catch (error) {
        const { message, responseCode } = error as { message?: string; responseCode?: number };
        throw new Error(redact(
          `The mail server refused or could not be reached${
            responseCode ? ` (${responseCode})` : ""
          }: ${message ?? String(error)}`,
        ));
      }
    },
  };
}

/** The URL without its password. */
export function redactSmtpUrl(smtpUrl: string): string {
  const url = new URL(smtpUrl);
  if (url.password) url.password = "***";
  return url.href;
}

/** `text` with every non-empty secret in `secrets` replaced by `***`. */
export function redactSecret(text: string, secrets: string[]): string {
  let out = text;
  for (const secret of secrets) if (secret) out = out.split(secret).join("***");
  return out;
}
