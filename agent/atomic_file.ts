/**
 * Files a reader must never see half-written (the token, persona files, inbox messages, spool
 * items): written to a temporary name beside the target, fsync'd, renamed over it, and the
 * directory fsync'd, so after a crash or power loss the file is either the old one or the new.
 */
export async function writeFileAtomic(
  path: string,
  data: string,
  options: { mode?: number } = {},
): Promise<void> {
  const dir = path.slice(0, path.lastIndexOf("/")) || ".";
  const temporary = `${path}.${crypto.randomUUID()}.tmp`;
  const file = await Deno.open(temporary, {
    write: true,
    createNew: true,
    mode: options.mode ?? 0o644,
  });
  try {
    const bytes = new TextEncoder().encode(data);
    for (let written = 0; written < bytes.length;) {
      written += await file.write(bytes.subarray(written));
    }
    await file.sync();
  } catch (error) {
    file.close();
    await Deno.remove(temporary).catch(() => {});
    throw error;
  }
  file.close();
  await Deno.rename(temporary, path);
  await syncDirectory(dir);
}

/** Makes a rename or removal in `dir` durable. */
export async function syncDirectory(dir: string): Promise<void> {
  const handle = await Deno.open(dir, { read: true });
  try {
    await handle.sync();
  } finally {
    handle.close();
  }
}
