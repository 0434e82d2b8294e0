/**
 * The Azure driver's settings, read once at start and validated: a missing or malformed value
 * fails the start with a message naming the variable, never a request later.
 */
import { z } from "zod";

const SUBNET_ID =
  /^\/subscriptions\/[0-9a-f-]{36}\/resourceGroups\/[-\w._()]+\/providers\/Microsoft\.Network\/virtualNetworks\/[-\w._]+\/subnets\/[-\w._]+$/i;
const IMAGE_URN = /^[^:\s]+:[^:\s]+:[^:\s]+:[^:\s]+$/;
const IMAGE_ID =
  /^\/subscriptions\/[0-9a-f-]{36}\/resourceGroups\/[^/]+\/providers\/Microsoft\.Compute\/(images|galleries)\/.+$/i;

const AzureEnv = z.object({
  AZURE_TENANT_ID: z.string().min(1, "is required"),
  AZURE_CLIENT_ID: z.string().min(1, "is required"),
  AZURE_CLIENT_SECRET: z.string().min(1, "is required"),
  AZURE_SUBSCRIPTION_ID: z.uuid("must be a subscription UUID"),
  AZURE_RESOURCE_GROUP: z.string().regex(/^[-\w._()]{1,90}$/, "must be a resource group name"),
  AZURE_SUBNET_ID: z.string().regex(SUBNET_ID, "must be a subnet resource ID"),
  AZURE_VM_IMAGE: z.string().refine((v) => IMAGE_URN.test(v) || IMAGE_ID.test(v), {
    error: "must be a marketplace URN (publisher:offer:sku:version) or an image resource ID",
  }),
  AZURE_ADMIN_USERNAME: z.string().regex(/^[a-z_][a-z0-9_-]{0,31}$/, "must be a Linux user name"),
  AZURE_SSH_PUBLIC_KEY: z.string().trim().regex(
    /^(ssh-rsa|ssh-ed25519|ecdsa-sha2-nistp(256|384|521)) [A-Za-z0-9+/]+={0,3}( .*)?$/,
    "must be an OpenSSH public key (ssh-ed25519 AAAA..., ssh-rsa AAAA...)",
  ),
  AZURE_ARM_ENDPOINT: z.url({ protocol: /^https$/, error: "must be an https URL" }).optional(),
  AZURE_ARM_SCOPE: z.url({ protocol: /^https$/, error: "must be an https URL ending /.default" })
    .refine((v) => v.endsWith("/.default"), { error: "must end with /.default" }).optional(),
  AZURE_AUTHORITY_HOST: z.url({ protocol: /^https$/, error: "must be an https URL" }).optional(),
  REPORTER_PUBLIC_URL: z.url({ error: "must be the URL VMs use for vm-reporter" }).optional(),
  SUPABASE_URL: z.url().optional(),
});

export type ImageReference =
  | { publisher: string; offer: string; sku: string; version: string }
  | { id: string };

export interface AzureConfig {
  tenantId: string;
  clientId: string;
  clientSecret: string;
  subscriptionId: string;
  resourceGroup: string;
  subnetId: string;
  image: ImageReference;
  adminUsername: string;
  sshPublicKey: string;
  /** ARM endpoint and the token scope it accepts; set for sovereign clouds and for tests. */
  armEndpoint?: string;
  armScope: string;
  authorityHost?: string;
  /** vm-reporter as the VMs reach it, written into their boot data. */
  reporterUrl: string;
}

export function parseAzureConfig(env: Record<string, string | undefined>): AzureConfig {
  const present = Object.fromEntries(Object.entries(env).filter(([, v]) => v));
  const parsed = AzureEnv.safeParse(present);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) =>
      `${i.path.join(".")}: ${present[String(i.path[0])] === undefined ? "is required" : i.message}`
    );
    throw new Error(`COMPUTE_DRIVER=azure: ${problems.join("; ")}`);
  }
  const e = parsed.data;
  const reporterUrl = e.REPORTER_PUBLIC_URL ??
    (e.SUPABASE_URL ? new URL("/functions/v1/vm-reporter", e.SUPABASE_URL).href : undefined);
  if (!reporterUrl) {
    throw new Error("COMPUTE_DRIVER=azure: REPORTER_PUBLIC_URL: is required (or SUPABASE_URL)");
  }
  const [publisher, offer, sku, version] = e.AZURE_VM_IMAGE.split(":");
  return {
    tenantId: e.AZURE_TENANT_ID,
    clientId: e.AZURE_CLIENT_ID,
    clientSecret: e.AZURE_CLIENT_SECRET,
    subscriptionId: e.AZURE_SUBSCRIPTION_ID,
    resourceGroup: e.AZURE_RESOURCE_GROUP,
    subnetId: e.AZURE_SUBNET_ID,
    image: IMAGE_ID.test(e.AZURE_VM_IMAGE)
      ? { id: e.AZURE_VM_IMAGE }
      : { publisher: publisher!, offer: offer!, sku: sku!, version: version! },
    adminUsername: e.AZURE_ADMIN_USERNAME,
    sshPublicKey: e.AZURE_SSH_PUBLIC_KEY,
    ...(e.AZURE_ARM_ENDPOINT ? { armEndpoint: e.AZURE_ARM_ENDPOINT } : {}),
    armScope: e.AZURE_ARM_SCOPE ?? "https://management.azure.com/.default",
    ...(e.AZURE_AUTHORITY_HOST ? { authorityHost: e.AZURE_AUTHORITY_HOST } : {}),
    reporterUrl: reporterUrl.replace(/\/$/, ""),
  };
}
