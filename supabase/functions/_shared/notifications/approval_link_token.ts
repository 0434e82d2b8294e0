/**
 * Personal approval links' tokens (contract §13): `vma_` + 256 random bits (base64url), made by
 * the email sender for one recipient and one approval, put in that one email, and stored only as
 * their SHA-256 (private.approval_links), as reporter tokens are.
 */
import { APPROVAL_LINK_TOKEN_SHAPE } from "../../_contract/approval_links.ts";
import { base64url } from "../base64.ts";
import { hashSecretHex } from "../reporter_token.ts";

export interface ApprovalLinkToken {
  plaintext: string;
  /** SHA-256 of the plaintext, lowercase hex, as SQL's decode(…, 'hex') reads it. */
  hashHex: string;
}

export function newApprovalLinkToken(): ApprovalLinkToken {
  const plaintext = "vma_" + base64url(crypto.getRandomValues(new Uint8Array(32)));
  return { plaintext, hashHex: hashSecretHex(plaintext) };
}

export function looksLikeApprovalLinkToken(value: string): boolean {
  return APPROVAL_LINK_TOKEN_SHAPE.test(value);
}

/** `${siteUrl}/approval?token=…&decision=…`: the page that shows the approval and confirms. */
export function approvalLinkUrl(
  siteUrl: string,
  token: string,
  decision: "approved" | "rejected",
): string {
  const url = new URL(`${siteUrl}/approval`);
  url.searchParams.set("token", token);
  url.searchParams.set("decision", decision);
  return url.href;
}
