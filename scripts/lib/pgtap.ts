/**
 * pgTAP comes from Debian's `postgresql-<major>-pgtap`. When it is missing and this process may
 * install packages (root), it is installed; otherwise the message names the package to install.
 */
import { findPostgresBin } from "./postgres_cluster.ts";

export async function ensurePgTap(log: (line: string) => void): Promise<void> {
  const bin = await findPostgresBin();
  const major = /\/postgresql\/(\d+)\/bin$/.exec(bin)?.[1] ?? "15";
  const control = `/usr/share/postgresql/${major}/extension/pgtap.control`;
  if (await exists(control)) return;
  const pkg = `postgresql-${major}-pgtap`;
  if (Deno.uid() !== 0) {
    throw new Error(
      `pgTAP is not installed: install Debian's package ${pkg} (apt-get install ${pkg})`,
    );
  }
  log(`installing ${pkg}`);
  for (const args of [["update", "-qq"], ["install", "-y", "-qq", pkg]]) {
    const result = await new Deno.Command("apt-get", {
      args,
      env: { DEBIAN_FRONTEND: "noninteractive" },
      stdout: "null",
      stderr: "piped",
    }).output();
    if (!result.success) {
      throw new Error(
        `apt-get ${args.join(" ")} failed: ${new TextDecoder().decode(result.stderr)}`,
      );
    }
  }
  if (!(await exists(control))) throw new Error(`${pkg} installed but ${control} is missing`);
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch {
    return false;
  }
}
