import { commandsPoll as contract } from "../../_contract/reporter.ts";
import { defineRoute } from "../route.ts";

// A poll can expire approvals: an event.
export const commandsPoll = defineRoute(contract, {
  data: "private.poll_commands(a.project_id, a.body, $2)",
}, { events: true });
