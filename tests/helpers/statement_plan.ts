/**
 * How PostgreSQL would run a vm-reporter route's statement (dispatch.ts `statementOf`) for one
 * request: the scan node types it plans on a table. Tests hold hot paths to index probes on
 * tables that grow with the fleet, where a plan that reads every row once looked cheap to the
 * planner and costs more with every VM.
 */
import type { Sql } from "../../supabase/functions/_shared/db.ts";
import { statementOf } from "../../supabase/functions/vm-reporter/dispatch.ts";
import type { RouteStatement } from "../../supabase/functions/vm-reporter/route.ts";

interface PlanNode {
  "Node Type": string;
  "Relation Name"?: string;
  Plans?: PlanNode[];
}

/**
 * The scans of `table` (a partitioned table's partitions included: `table` and `table_*`) in the
 * plan of `statement` for one request of `projectId` with `body`, each as `<node type> on <table>`.
 */
export async function plannedScans(
  sql: Sql,
  statement: RouteStatement,
  request: { projectId: string; body: unknown },
  table: string,
): Promise<string[]> {
  const batch = [{ project_id: request.projectId, token_hash: "00", body: request.body }];
  const [{ "QUERY PLAN": [plan] }] = await sql.unsafe<[{ "QUERY PLAN": [{ Plan: PlanNode }] }]>(
    `explain (format json) ${statementOf(statement)}`,
    [
      sql.json(batch as never),
      sql.json({ rate_limit: 10, command_lease_seconds: 60 } as never),
    ] as never[],
  );
  const scans: string[] = [];
  const walk = (node: PlanNode) => {
    const name = node["Relation Name"];
    if (name === table || name?.startsWith(`${table}_`)) {
      scans.push(`${node["Node Type"]} on ${name}`);
    }
    for (const child of node.Plans ?? []) walk(child);
  };
  walk(plan.Plan);
  return scans;
}
