/**
 * What the tests need from Debian (pgTAP, Chromium): present, or installed with apt-get when this
 * process may install packages (root); otherwise the message names the package to install.
 */
export async function ensureDebianPackage(
  pkg: string,
  installed: string,
  log: (line: string) => void,
): Promise<void> {
  if (await exists(installed)) return;
  if (Deno.uid() !== 0) {
    throw new Error(
      `${installed} is missing: install Debian's package ${pkg} (apt-get install ${pkg})`,
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
  if (!(await exists(installed))) throw new Error(`${pkg} installed but ${installed} is missing`);
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch {
    return false;
  }
}
