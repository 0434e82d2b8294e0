/**
 * Where the person is, as the one store has it (the address, address.ts): the place, its view and
 * the project shown; and going somewhere else.
 */
import type { Place } from "../address.ts";
import type { Store } from "../store.ts";

export function where(store: Store) {
  const place = () => store.state.place;
  return {
    place,
    selectedId: () => {
      const p = place();
      return p.view === "project" ? p.project : undefined;
    },
    viewOf: () => {
      const v = place().view;
      return v === "organization" ? "project" : v;
    },
    go: (next: Place) => store.go(next),
  };
}
