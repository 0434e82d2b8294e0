/** Answers several actions share. */
import { z } from "zod";
import { projectStatus } from "../_shared/project_state.ts";

/** create, start, stop and delete: the project and the status the request moved it to. */
export const transitionAnswer = z.object({ project_id: z.uuid(), status: projectStatus });
