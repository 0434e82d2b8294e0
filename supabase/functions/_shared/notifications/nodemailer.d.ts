/**
 * The part of nodemailer (npm `nodemailer`) smtp.ts uses. Declared here rather than taken from
 * `@types/nodemailer`, which pulls npm's `@types/node` into the type check and changes Deno's own
 * Node and web stream types for every module.
 */
export interface SendMailOptions {
  from: string;
  to: string;
  subject: string;
  text: string;
  html: string;
}

export interface Transporter {
  sendMail(message: SendMailOptions): Promise<unknown>;
}

declare const nodemailer: {
  createTransport(options: Record<string, unknown>): Transporter;
};

export default nodemailer;
