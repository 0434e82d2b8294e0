/**
 * How the stand-in answers, identity and ARM alike: JSON with the headers ARM sends on every
 * answer (fresh request and correlation ids), and ARM's error body `{error: {code, message}}`.
 */

export function json(status: number, body: unknown, extra: Record<string, string> = {}): Response {
  const headers = new Headers({
    "content-type": "application/json; charset=utf-8",
    "cache-control": "no-cache",
    "x-ms-request-id": crypto.randomUUID(),
    "x-ms-correlation-request-id": crypto.randomUUID(),
  });
  for (const [k, v] of Object.entries(extra)) headers.set(k, v);
  // No body (204, the empty answers of the action examples): no content type either, as ARM.
  if (body === undefined || body === null || status === 204) {
    headers.delete("content-type");
    return new Response(null, { status, headers });
  }
  return new Response(JSON.stringify(body), { status, headers });
}

export function armError(
  code: string,
  message: string,
): { error: { code: string; message: string } } {
  return { error: { code, message } };
}

/** ARM's 404 for a VM, word for word. */
export function resourceNotFound(vmName: string, resourceGroup: string) {
  return armError(
    "ResourceNotFound",
    `The Resource 'Microsoft.Compute/virtualMachines/${vmName}' under resource group '${resourceGroup}' was not found. ` +
      "For more details please go to https://aka.ms/ARMResourceNotFoundFix",
  );
}
