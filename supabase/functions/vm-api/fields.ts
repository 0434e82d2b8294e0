/** Field rules shared by several actions, with messages that say what is expected. */
import { z } from "zod";

export const projectId = z.uuid({ error: "must be a UUID string" });
