/**
 * The page's one small store: where the person is (mirrored in the URL, address.ts), whether
 * the live connection is up, and the person's GitHub account. Views read it and subscribe; nothing
 * else keeps navigation state.
 */
import { formatPlace, parsePlace, type Place } from "./address.ts";
import type { GitHubAccount } from "./data.ts";

export type Connection = "connecting" | "live" | "reconnecting";

export interface State {
  place: Place;
  connection: Connection;
  /** The person's GitHub account (contract §18): null for none, undefined until read. */
  github: GitHubAccount | null | undefined;
}

type Listener = (state: State, previous: State) => void;

export interface Location {
  hash: string;
}

export class Store {
  #state: State;
  readonly #listeners = new Set<Listener>();

  constructor(readonly location: Location) {
    this.#state = {
      place: parsePlace(location.hash),
      connection: "connecting",
      github: undefined,
    };
  }

  get state(): State {
    return this.#state;
  }

  subscribe(listener: Listener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Goes somewhere: the address changes (a new history entry) and the listeners are told. */
  go(place: Place): void {
    const hash = formatPlace(place);
    if (this.location.hash !== hash) this.location.hash = hash;
    this.#set({ place });
  }

  /** The address changed under us (Back, a link, an edit of the URL). */
  followAddress(): void {
    const place = parsePlace(this.location.hash);
    if (formatPlace(place) !== formatPlace(this.#state.place)) this.#set({ place });
  }

  setConnection(connection: Connection): void {
    if (connection !== this.#state.connection) this.#set({ connection });
  }

  setGitHub(github: GitHubAccount | null): void {
    if (JSON.stringify(github) !== JSON.stringify(this.#state.github)) this.#set({ github });
  }

  #set(change: Partial<State>): void {
    const previous = this.#state;
    this.#state = { ...previous, ...change };
    for (const listener of [...this.#listeners]) listener(this.#state, previous);
  }
}
