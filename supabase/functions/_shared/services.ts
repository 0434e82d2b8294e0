/**
 * The services of the functions that act on VMs (vm-api, vm-reconciler): the base services plus
 * the compute driver. Built once per isolate (hosted) or once per process (local stack and tests).
 */
import type { Compute } from "./compute/compute.ts";
import { type ComputeHooks, createCompute } from "./compute/create_compute.ts";
import { type BaseServices, createBaseServices } from "./base_services.ts";
import { type Config, loadConfig } from "./config.ts";
import type { LogSink } from "./log.ts";

export { type BaseServices, closeServices } from "./base_services.ts";

/** Adds the compute driver, for the functions that act on VMs (vm-api, vm-reconciler). */
export interface Services extends BaseServices {
  compute: Compute;
}

export async function createServices(
  config: Config = loadConfig(),
  hooks: ComputeHooks = {},
  sink?: LogSink,
): Promise<Services> {
  const base = createBaseServices(config, sink);
  return { ...base, compute: await createCompute(config, base.sql, base.log, hooks) };
}
