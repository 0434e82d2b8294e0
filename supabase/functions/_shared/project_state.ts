/** A project's lifecycle and health states, as public.projects' check constraints allow them. */
import { z } from "zod";

export const projectStatus = z.enum([
  "provisioning",
  "active",
  "running",
  "stopping",
  "stopped",
  "starting",
  "deleting",
]);

export const healthStatus = z.enum(["healthy", "degraded", "unhealthy", "initializing"]);
