/** Picks the compute driver named by COMPUTE_DRIVER. */
import type { Config } from "../config.ts";
import type { Sql } from "../db.ts";
import type { BootData, Compute, VmSpec } from "./compute.ts";
import { createLocalCompute } from "./local.ts";

export interface ComputeHooks {
  onProvision?: (vm: VmSpec, boot: BootData) => void;
}

export function createCompute(
  config: Config,
  sql: Sql,
  hooks: ComputeHooks = {},
): Promise<Compute> {
  switch (config.computeDriver) {
    case "local":
      return createLocalCompute(sql, {
        ...config.local,
        faults: config.localComputeFaults,
        ...(hooks.onProvision ? { onProvision: hooks.onProvision } : {}),
      });
    case "azure":
      throw new Error("COMPUTE_DRIVER=azure is not available in this build yet");
  }
}
