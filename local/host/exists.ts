/** Whether a path exists (file or directory); any error reading it counts as absent. */
export async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch {
    return false;
  }
}
