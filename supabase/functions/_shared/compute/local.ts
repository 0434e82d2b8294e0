/**
 * COMPUTE_DRIVER=local: simulated VMs that behave like cloud VMs seen from the outside. Their
 * state lives in the database (schema `local_compute`, created by the driver itself, never by a
 * migration), so it survives a restart of the local stack and is shared by every process using
 * the same database, like a cloud provider's. A VM takes the configured time to boot, stop or
 * go away; `LOCAL_COMPUTE_FAULTS` makes chosen calls hang or fail, to rehearse failures.
 */
import type { Sql } from "../db.ts";
import {
  type BootData,
  type Compute,
  ComputeError,
  type PowerState,
  type VmSpec,
} from "./compute.ts";

export interface LocalComputeOptions {
  bootMs: number;
  stopMs: number;
  deleteMs: number;
  faults: string;
  /** Told when a VM has been handed its boot data (the simulated agents start from here). */
  onProvision?: (vm: VmSpec, boot: BootData) => void;
}

type Operation = "provision" | "start" | "deallocate" | "delete";
type Fault = "hang" | "error" | "reject";

export async function createLocalCompute(sql: Sql, options: LocalComputeOptions): Promise<Compute> {
  // Several processes may start on one database at once; creating the table is serialised.
  await sql.begin((tx) =>
    tx.unsafe(`
    select pg_advisory_xact_lock(7260002);
    create schema if not exists local_compute;
    create table if not exists local_compute.vms (
      project_id uuid primary key,
      name text not null,
      region text not null,
      vm_size text not null,
      -- Where the VM is heading, and when it gets there.
      target text not null check (target in ('running', 'deallocated', 'gone')),
      settles_at timestamptz not null,
      booted_from text not null default 'create' check (booted_from in ('create', 'start')),
      created_at timestamptz not null default now()
    );`)
  );
  const faults = parseFaults(options.faults);

  const inject = async (operation: Operation) => {
    switch (faults.get(operation)) {
      case "hang":
        await new Promise<never>(() => {});
        break;
      case "error":
        throw new ComputeError(
          "transient",
          `Simulated ${operation} failure (LOCAL_COMPUTE_FAULTS)`,
        );
      case "reject":
        throw new ComputeError(
          "rejected",
          `Simulated ${operation} rejection (LOCAL_COMPUTE_FAULTS)`,
        );
    }
  };
  const settles = (ms: number) => sql`now() + ${ms} * interval '1 millisecond'`;

  return {
    // One budget for the simulated provider (it has no limit, but the pacing is the same).
    writeScope: "local",

    async provision(vm, boot) {
      await inject("provision");
      await sql`
        insert into local_compute.vms (project_id, name, region, vm_size, target, settles_at)
        values (${vm.projectId}, ${vm.name}, ${vm.region}, ${vm.vmSize}, 'running',
                ${settles(options.bootMs)})
        on conflict (project_id) do nothing`;
      options.onProvision?.(vm, boot);
      return {};
    },

    async start(projectId) {
      await inject("start");
      const rows = await sql`
        update local_compute.vms set target = 'running', booted_from = 'start',
          settles_at = ${settles(options.bootMs)}
        where project_id = ${projectId} and target <> 'gone'
        returning 1`;
      if (rows.length === 0) throw new ComputeError("not_found", "The VM does not exist");
      return {};
    },

    async deallocate(projectId) {
      await inject("deallocate");
      const rows = await sql`
        update local_compute.vms set target = 'deallocated', settles_at = ${settles(options.stopMs)}
        where project_id = ${projectId} and target <> 'gone'
        returning 1`;
      if (rows.length === 0) throw new ComputeError("not_found", "The VM does not exist");
      return {};
    },

    async delete(projectId, { force }) {
      await inject("delete");
      // A VM that is already gone is deleted: the call is idempotent, as the cloud's is.
      await sql`
        update local_compute.vms set target = 'gone',
          settles_at = ${settles(force ? 0 : options.deleteMs)}
        where project_id = ${projectId} and target <> 'gone'`;
      return {};
    },

    async powerState(projectId) {
      const [vm] = await sql<{ target: string; settled: boolean; booted_from: string }[]>`
        select target, settles_at <= now() as settled, booted_from
        from local_compute.vms where project_id = ${projectId}`;
      if (!vm) return { state: "gone" };
      if (vm.target === "gone" && vm.settled) {
        await sql`delete from local_compute.vms where project_id = ${projectId} and target = 'gone'`;
        return { state: "gone" };
      }
      return { state: observed(vm.target, vm.settled, vm.booted_from) };
    },
  };
}

function observed(target: string, settled: boolean, bootedFrom: string): PowerState {
  if (target === "running") {
    return settled ? "running" : bootedFrom === "start" ? "starting" : "creating";
  }
  if (target === "deallocated") return settled ? "deallocated" : "stopping";
  return "deleting";
}

function parseFaults(spec: string): Map<Operation, Fault> {
  const faults = new Map<Operation, Fault>();
  for (const item of spec.split(",").map((s) => s.trim()).filter(Boolean)) {
    const [operation, fault] = item.split(":");
    if (
      !["provision", "start", "deallocate", "delete"].includes(operation ?? "") ||
      !["hang", "error", "reject"].includes(fault ?? "")
    ) {
      throw new Error(
        `LOCAL_COMPUTE_FAULTS: "${item}" is not <provision|start|deallocate|delete>:<hang|error|reject>`,
      );
    }
    faults.set(operation as Operation, fault as Fault);
  }
  return faults;
}
