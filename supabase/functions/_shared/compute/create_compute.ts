/** Picks the compute driver named by COMPUTE_DRIVER. */
import { type Config, ConfigError } from "../config.ts";
import type { Sql } from "../db.ts";
import type { Logger } from "../log.ts";
import type { BootData, Compute, VmSpec } from "./compute.ts";
import { createLocalCompute } from "./local.ts";

export interface ComputeHooks {
  onProvision?: (vm: VmSpec, boot: BootData) => void;
}

export async function createCompute(
  config: Config,
  sql: Sql,
  log: Logger,
  hooks: ComputeHooks = {},
): Promise<Compute> {
  switch (config.computeDriver) {
    case "local":
      // The local driver creates its own schema (DDL) and simulates VMs in this database: never
      // in a hosted project's database, whatever COMPUTE_DRIVER says.
      if (config.hosted) {
        throw new ConfigError(
          "COMPUTE_DRIVER=local never runs on a hosted project: set COMPUTE_DRIVER=azure",
        );
      }
      return await createLocalCompute(sql, {
        ...config.local,
        faults: config.localComputeFaults,
        ...(hooks.onProvision ? { onProvision: hooks.onProvision } : {}),
      });
    case "azure": {
      // Loaded only with COMPUTE_DRIVER=azure: the Azure SDKs are heavy for a cold start. The literal
      // path still puts them in the bundle of every function importing this module, which is why
      // vm-reporter reaches only base_services.ts (checked by tests/unit/bundle_graph_test.ts).
      const { createAzureCompute } = await import("./azure.ts");
      return createAzureCompute(config.azure!, log.with({ component: "azure" }));
    }
  }
}
