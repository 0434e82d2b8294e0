import { approvals as contract } from "../../_contract/reporter.ts";
import { defineRoute } from "../route.ts";

export const approvals = defineRoute(contract, {
  data: "private.request_approval(a.project_id, a.body, $2)",
}, { events: true, emails: true });
