/** Defaults the outside world relies on, stated once. */
export const DEFAULT_REGION = "australiaeast";
export const DEFAULT_VM_SIZE = "Standard_D2s_v3";
/** MAX_BODY_BYTES's default: the largest request body a function reads (contract §1). */
export const DEFAULT_MAX_BODY_BYTES = 1_048_576;

/**
 * Where the VM agent reads its boot data (its `--bootstrap` default, contract §7), which the
 * platform's cloud-init writes. Spelled in parts: the Supabase CLI's bundler takes a string
 * literal that looks like a file path for a file to upload with the function, and this one is a
 * path on the VM, not in the project.
 */
export const BOOT_CONFIG_PATH = ["", "etc", "vm-agent", "bootstrap" + ".json"].join("/");
