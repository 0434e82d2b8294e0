/** pgTAP comes from Debian's `postgresql-<major>-pgtap`, installed when missing (as root). */
import { ensureDebianPackage } from "../host/debian_package.ts";
import { findPostgresBin } from "./postgres_cluster.ts";

export async function ensurePgTap(log: (line: string) => void): Promise<void> {
  const bin = await findPostgresBin();
  const major = /\/postgresql\/(\d+)\/bin$/.exec(bin)?.[1] ?? "15";
  await ensureDebianPackage(
    `postgresql-${major}-pgtap`,
    `/usr/share/postgresql/${major}/extension/pgtap.control`,
    log,
  );
}
