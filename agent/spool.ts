/**
 * The durable queue between the agent team and the reporter. An item is on disk (its own file,
 * written atomically and fsync'd) before its sender hears "spooled", and leaves the disk only
 * after the reporter has accepted it, so neither a reporter outage of any length nor a kill -9
 * nor a reboot loses it. Items are drained in the order they came; each carries the ids the
 * agent assigned, so a resend after a crash between "accepted" and "removed" is not stored twice.
 */
import { syncDirectory, writeFileAtomic } from "./atomic_file.ts";

export interface SpoolItem {
  seq: number;
  route: string;
  body: unknown;
}

export class SpoolFullError extends Error {
  override readonly name = "SpoolFullError";
}

const ITEM = /^(\d{12})\.json$/;

export class Spool {
  readonly #dir: string;
  readonly #maxItems: number;
  #next = 1;
  #count = 0;

  private constructor(dir: string, maxItems: number) {
    this.#dir = dir;
    this.#maxItems = maxItems;
  }

  /** Opens (or creates) the spool in `dir`, continuing its numbering after what it holds. */
  static async open(dir: string, maxItems = 10_000): Promise<Spool> {
    await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
    const spool = new Spool(dir, maxItems);
    for (const seq of await spool.#sequences()) {
      spool.#next = Math.max(spool.#next, seq + 1);
      spool.#count++;
    }
    return spool;
  }

  get size(): number {
    return this.#count;
  }

  /** Stores an item durably; refuses (SpoolFullError) rather than grow without bound. */
  async append(route: string, body: unknown): Promise<number> {
    if (this.#count >= this.#maxItems) {
      throw new SpoolFullError(
        `The spool holds ${this.#count} items, its limit: nothing more is accepted until the ` +
          `reporter takes some`,
      );
    }
    const seq = this.#next++;
    this.#count++;
    try {
      await writeFileAtomic(this.#path(seq), JSON.stringify({ route, body }), { mode: 0o600 });
    } catch (error) {
      this.#count--;
      throw error;
    }
    return seq;
  }

  /** The oldest items, up to `limit`, in order. */
  async peek(limit: number): Promise<SpoolItem[]> {
    const items: SpoolItem[] = [];
    for (const seq of (await this.#sequences()).slice(0, limit)) {
      const { route, body } = JSON.parse(await Deno.readTextFile(this.#path(seq)));
      items.push({ seq, route, body });
    }
    return items;
  }

  /** The reporter has the item: it leaves the disk. */
  async remove(seq: number): Promise<void> {
    await Deno.remove(this.#path(seq));
    await syncDirectory(this.#dir);
    this.#count--;
  }

  async #sequences(): Promise<number[]> {
    const seqs: number[] = [];
    for await (const entry of Deno.readDir(this.#dir)) {
      const match = ITEM.exec(entry.name);
      if (entry.isFile && match) seqs.push(Number(match[1]));
    }
    return seqs.sort((a, b) => a - b);
  }

  #path(seq: number): string {
    return `${this.#dir}/${String(seq).padStart(12, "0")}.json`;
  }
}
