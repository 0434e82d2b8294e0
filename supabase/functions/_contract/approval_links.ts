/**
 * The approval-links function (contract §13): what the `/approval` page reads about the approval
 * an emailed link names (GET, which decides nothing), and the confirmation that decides it as the
 * link's person (POST). The token is the credential: `vma_` + 256 random bits, base64url.
 */
import { z } from "zod";

/** What a token looks like; anything else is refused without asking the database. */
export const APPROVAL_LINK_TOKEN_SHAPE = /^vma_[A-Za-z0-9_-]{43}$/;

const token = z.string({ error: "must be a string" }).min(1, { error: "must not be empty" })
  .max(200, { error: "must be at most 200 characters" })
  .describe("The link's token: the `token` parameter of the emailed link (vma_...)");

const decision = z.enum(["approved", "rejected"], { error: "must be approved or rejected" });

/** GET/HEAD `?token=`: the approval, for the page; never a decision. */
export const approvalLinkInfo = {
  summary: "What the approval page shows about the approval a link names; decides nothing.",
  response: z.object({
    approval_id: z.uuid(),
    project_id: z.uuid(),
    project_name: z.string(),
    agent: z.string(),
    action: z.string(),
    description: z.string(),
    risk: z.enum(["low", "medium", "high"]),
    status: z.literal("pending"),
    expires_at: z.iso.datetime({ offset: true }),
  }),
};

/** POST: the confirmation, as the link's person. */
export const approvalLinkDecide = {
  summary: "Decides the approval a link names, as the person it was sent to (the dashboard's " +
    "decide_approval: approval.decided, the command to the VM).",
  request: z.object({
    token,
    decision,
    comment: z.string({ error: "must be a string" })
      .max(5000, { error: "must be at most 5000 characters" }).optional(),
  }),
  response: z.object({ approval_id: z.uuid(), status: decision }),
};

export type ApprovalLinkInfo = z.output<typeof approvalLinkInfo.response>;
export type ApprovalLinkDecision = z.output<typeof approvalLinkDecide.response>;
