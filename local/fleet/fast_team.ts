/**
 * Settings for a stack whose simulated VMs and team move fast (boots, stops, agent cycles and
 * reconciler runs), for the integration tests and the benchmarks that run whole tasks: what is
 * left of a task's time is mostly its sessions.
 */
export const FAST_TEAM = {
  LOCAL_VM_BOOT_MS: "300",
  LOCAL_VM_STOP_MS: "200",
  LOCAL_VM_DELETE_MS: "200",
  LOCAL_AGENT_CYCLE_MS: "200",
  RECONCILE_INTERVAL_MS: "100",
  VM_REPORTER_RATE_LIMIT: "100000",
};
