import { approvalsAck as contract } from "../../_contract/reporter.ts";
import { defineRoute } from "../route.ts";

export const approvalsAck = defineRoute(contract, {
  data: "private.acknowledge_approval(a.project_id, a.body, $2)",
});
