import { z } from "zod";
import { defineRoute } from "../route.ts";
import { accepted, agentName, batch, text, timestamp, uuid } from "../fields.ts";

export const messages = defineRoute({
  path: "/messages",
  sql: "private.report_messages",
  summary: "A batch of agent chat messages; a repeated message id is stored once.",
  schema: z.object({
    messages: batch(z.object({
      id: uuid.nullish(),
      agent: agentName,
      content: text(20000),
      created_at: timestamp.nullish(),
    })),
  }),
  response: accepted,
});
