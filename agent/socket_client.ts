/**
 * How an agent team talks to the VM agent: HTTP over its Unix socket (contract §7). Used by the
 * simulated team of the local driver and by tests; a real team can do the same with curl
 * (`curl --unix-socket /var/lib/vm-agent/agent.sock http://vm-agent/messages -d ...`).
 */
export interface SocketAnswer {
  status: number;
  // deno-lint-ignore no-explicit-any
  body: any;
}

export class AgentSocket {
  readonly #client: Deno.HttpClient;

  constructor(socketPath: string) {
    this.#client = Deno.createHttpClient({ proxy: { transport: "unix", path: socketPath } });
  }

  post(path: string, body: unknown): Promise<SocketAnswer> {
    return this.#request("POST", path, body);
  }

  get(path: string): Promise<SocketAnswer> {
    return this.#request("GET", path);
  }

  close(): void {
    this.#client.close();
  }

  async #request(method: string, path: string, body?: unknown): Promise<SocketAnswer> {
    const response = await fetch(`http://vm-agent${path}`, {
      method,
      client: this.#client,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, body: await response.json() };
  }
}
