import { z } from "zod";
import { defineRoute } from "../route.ts";
import { agentName, batch, text, timestamp, uuid } from "../fields.ts";

export const messages = defineRoute(z.object({
  messages: batch(z.object({
    id: uuid.nullish(),
    agent: agentName,
    content: text(20000),
    created_at: timestamp.nullish(),
  })),
}));
