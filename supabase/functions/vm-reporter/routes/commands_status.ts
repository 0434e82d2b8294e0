import { commandsStatus as contract } from "../../_contract/reporter.ts";
import { defineRoute } from "../route.ts";

export const commandsStatus = defineRoute(contract, {
  data: "private.report_command_status(a.project_id, a.body, $2)",
});
