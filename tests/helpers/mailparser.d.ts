/** The part of mailparser (npm) smtp_catcher.ts uses; see smtp_server.d.ts for why. */
import type { Readable } from "node:stream";

export interface ParsedMail {
  subject?: string;
  text?: string;
  html?: string | false;
}

export declare function simpleParser(source: Readable): Promise<ParsedMail>;
