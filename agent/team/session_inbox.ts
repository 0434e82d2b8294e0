/**
 * What a running session is told (contract §17, "Steering"): the session reads user messages on
 * its input (`--input-format stream-json`) and says which ones it took (`--replay-user-messages`
 * echoes each as it takes it). The task's prompt is the first; a chat message for the agent that
 * arrives while it works is written after it and reaches the model at its next request, in the
 * same session. The session's input closes once it answered everything it took and nothing more
 * is waiting; a message the session never took (it ended at that moment) is handed back, so it
 * goes to the board for the next session: never lost, never twice. An interrupt (`interrupt_agent`)
 * stops what the session is doing and ends its turn; the session then waits for the next message
 * as long as it is told (AGENT_IDLE_SESSION_MINUTES), and ends if none comes.
 */
export interface InboxMessage {
  id: string;
  text: string;
  /** The chat message's file in the VM's inbox, removed once it is taken or on the board. */
  file?: string;
  /** Called once the session took it (the message is delivered). */
  onTaken?: () => void | Promise<void>;
}

export class SessionInbox {
  #writer: WritableStreamDefaultWriter<Uint8Array> | undefined;
  #open = false;
  readonly #written: InboxMessage[] = [];
  #taken = 0;
  /** After an interrupt: how long the session waits for a message once its turn ended. */
  #holdMs = 0;
  #idle: ReturnType<typeof setTimeout> | undefined;
  /** An interrupt was the last thing the session was told (its last turn ended on it). */
  interrupted = false;

  /** The session's input, and the task's prompt as its first message. */
  async attach(stdin: WritableStream<Uint8Array>, prompt: string): Promise<void> {
    this.#writer = stdin.getWriter();
    this.#open = true;
    await this.#write({ id: "prompt", text: prompt });
  }

  /** Whether a message with this id was written to the session already. */
  has(id: string): boolean {
    return this.#written.some((m) => m.id === id);
  }

  /** Writes a message into the running session; false when it takes no more input. */
  async send(message: InboxMessage): Promise<boolean> {
    if (!this.#open) return false;
    // A message for a session waiting after an interrupt: it goes on, and ends as usual once it
    // answered (the wait was for this message).
    clearTimeout(this.#idle);
    this.interrupted = false;
    this.#holdMs = 0;
    try {
      await this.#write(message);
      return true;
    } catch {
      this.#open = false;
      return false;
    }
  }

  /** The session echoed a user message: the oldest one not yet taken is delivered. */
  async taken(): Promise<void> {
    const message = this.#written[this.#taken++];
    await message?.onTaken?.();
  }

  /**
   * Stops what the session is doing (the CLI's `interrupt` control request): its turn ends, and it
   * then waits `holdMs` for a message. False when the session takes no more input.
   */
  async interrupt(holdMs: number): Promise<boolean> {
    if (!this.#open) return false;
    const request = {
      type: "control_request",
      request_id: crypto.randomUUID(),
      request: { subtype: "interrupt" },
    };
    // Holding before the request is written: the turn may end before the write returns. A
    // message already written and not yet taken is the next message: no wait for another.
    this.#holdMs = this.untaken().length ? 0 : holdMs;
    this.interrupted = true;
    try {
      await this.#writer!.write(new TextEncoder().encode(`${JSON.stringify(request)}\n`));
      return true;
    } catch {
      this.#holdMs = 0;
      this.interrupted = false;
      return false;
    }
  }

  /**
   * A turn ended: with nothing written that the session has not taken, its input closes — at
   * once, or, after an interrupt, once no message came for the wait it asked for. Every turn that
   * ends before that message keeps the session waiting: the CLI may take a turn of its own after
   * the interrupt (the stopped command's notification), and the person's correction must still
   * find the session open.
   */
  async turnEnded(): Promise<void> {
    if (this.#taken < this.#written.length) return;
    if (this.#holdMs > 0) {
      clearTimeout(this.#idle);
      this.#idle = setTimeout(() => this.close(), this.#holdMs);
    } else {
      await this.close();
    }
  }

  async close(): Promise<void> {
    clearTimeout(this.#idle);
    if (!this.#open) return;
    this.#open = false;
    await this.#writer?.close().catch(() => {});
  }

  /** Messages written but never taken: the session ended first. */
  untaken(): InboxMessage[] {
    return this.#written.slice(Math.max(this.#taken, 1)).filter((m) => m.id !== "prompt");
  }

  async #write(message: InboxMessage): Promise<void> {
    const line = JSON.stringify({ type: "user", message: { role: "user", content: message.text } });
    await this.#writer!.write(new TextEncoder().encode(`${line}\n`));
    this.#written.push(message);
  }
}
