/**
 * The parts of smtp-server and mailparser (npm) smtp_catcher.ts uses. Declared here rather than
 * taken from their `@types/` packages, which pull npm's `@types/node` into the type check and
 * change Deno's own Node and web stream types for every module.
 */
import type { Server } from "node:net";
import type { Readable } from "node:stream";

export interface SmtpSession {
  user?: unknown;
  envelope: { mailFrom: { address: string } | false; rcptTo: { address: string }[] };
}

export interface SmtpServerOptions {
  disabledCommands?: string[];
  allowInsecureAuth?: boolean;
  authOptional?: boolean;
  logger?: boolean;
  onAuth?(
    auth: { username?: string; password?: string },
    session: SmtpSession,
    callback: (error: Error | null, response?: { user: string }) => void,
  ): void;
  onData?(stream: Readable, session: SmtpSession, callback: (error?: Error) => void): void;
}

export declare class SMTPServer {
  constructor(options: SmtpServerOptions);
  server: Server;
  listen(port: number, host: string, callback: () => void): void;
  close(callback: () => void): void;
}
