/**
 * A VM's boot data: cloud-init user data that writes what the VM's agent runtime needs to find
 * the platform: its project, the reporter's URL and the single-use bootstrap credential. Readable
 * by anything on the VM and by anyone who can read the VM in Azure, which is why it carries a
 * credential worth nothing once exchanged, never a reporter token.
 */
import { BOOT_CONFIG_PATH } from "../../_contract/defaults.ts";
import { base64 } from "../base64.ts";

export interface BootConfig {
  projectId: string;
  reporterUrl: string;
  bootstrapCredential: string;
}

export function cloudInit(boot: BootConfig): string {
  const json = JSON.stringify({
    project_id: boot.projectId,
    reporter_url: boot.reporterUrl,
    bootstrap_credential: boot.bootstrapCredential,
  });
  return [
    "#cloud-config",
    "write_files:",
    `  - path: ${BOOT_CONFIG_PATH}`,
    // The agent runs as `vm-agent` (deploy/vm-agent.service) and must read the credential;
    // the image creates that user, so cloud-init can give it the file before the unit starts.
    "    owner: vm-agent:vm-agent",
    '    permissions: "0600"',
    "    encoding: b64",
    `    content: ${base64(json)}`,
    // The image carries the agent and its unit (docs/operations.md); boot data starts it.
    "runcmd:",
    "  - [systemctl, enable, --now, vm-agent.service]",
    "",
  ].join("\n");
}
