/**
 * Microsoft's official examples (`local/arm/examples/`, api-version 2025-04-01; see its
 * README.md), the bodies every answer starts from. Loaded once, at module load.
 */

/** PUT `{vm}`: its 201 (created) and 200 (updated) bodies. */
export const CREATE_EXAMPLE = "VirtualMachine_Create_WithNetworkInterfaceConfiguration";
/** GET `{vm}`, the list, and the `Location` result of a create/update. */
export const GET_EXAMPLE = "VirtualMachine_Get";
/** GET `{vm}/instanceView` and `$expand=instanceView`. */
export const INSTANCE_VIEW_EXAMPLE = "VirtualMachine_Get_InstanceView";
/** The actions' status codes (their examples have no body). */
export const ACTION_EXAMPLES = {
  start: "VirtualMachine_Start_MinimumSet_Gen",
  deallocate: "VirtualMachine_Deallocate_MinimumSet_Gen",
  powerOff: "VirtualMachine_PowerOff_MinimumSet_Gen",
  delete: "VirtualMachine_Delete_Force",
} as const;

const EXAMPLES_DIR = new URL("./examples/", import.meta.url);

interface ExampleFile {
  responses: Record<string, { body?: unknown; headers?: Record<string, string> }>;
}

const EXAMPLES = new Map<string, ExampleFile>(
  [CREATE_EXAMPLE, GET_EXAMPLE, INSTANCE_VIEW_EXAMPLE, ...Object.values(ACTION_EXAMPLES)].map(
    (name) => [
      name,
      JSON.parse(Deno.readTextFileSync(new URL(`${name}.json`, EXAMPLES_DIR))) as ExampleFile,
    ],
  ),
);

/**
 * A deep clone of `responses[status].body` of an official example (`undefined` when the example
 * answers that status without a body). Throws when the example has no such status.
 */
export function example(name: string, status: number): unknown {
  const file = EXAMPLES.get(name);
  if (!file) throw new Error(`test ARM server: example ${name}.json is not loaded`);
  const response = file.responses[String(status)];
  if (!response) throw new Error(`test ARM server: ${name}.json has no ${status} response`);
  return structuredClone(response.body);
}
