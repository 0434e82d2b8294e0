import { sessionSteps as contract } from "../../_contract/reporter.ts";
import { defineRoute } from "../route.ts";

// The body as the contract parsed it: `steps` the valid ones (summary one line, detail cut to
// 4 KiB with `truncated`), `rejected` the others with their 400, answered as they are. A step is
// stored once per (session_id, seq): a repeat, in the batch or already stored, is skipped whatever
// its `at` (the probe is one key index probe per step and partition: without `at` it cannot
// prune), and two requests racing with the same step meet on the key. A step dated after its arrival is stored
// at its arrival (a VM clock ahead must not fill partitions to come). The statement's trigger
// broadcasts `telemetry` {table: session_steps} (22_session_steps.sql).
export const sessionSteps = defineRoute(contract, {
  with: `
    stored as (
      insert into private.session_steps
        (project_id, session_id, seq, agent, kind, tool, summary, detail, truncated, at)
      select distinct on (a.project_id, s.session_id, s.seq)
             a.project_id, s.session_id, s.seq, s.agent, s.kind, s.tool, s.summary, s.detail,
             coalesce(s.truncated, false), least(s.at, now())
      from admitted a, jsonb_to_recordset(a.body -> 'steps') as s (
        session_id text, seq integer, agent text, kind text, tool text, summary text,
        detail text, truncated boolean, at timestamptz
      )
      -- LATERAL with LIMIT: probes per step. A NOT EXISTS became an anti join that, the batch's
      -- steps estimated at a hundred per request, sorted every stored step of every partition.
      left join lateral (
        select true as stored from private.session_steps t
        where t.project_id = a.project_id and t.session_id = s.session_id and t.seq = s.seq
        limit 1
      ) repeat on true
      where repeat.stored is null
      order by a.project_id, s.session_id, s.seq
      on conflict do nothing
    )`,
  data: `jsonb_build_object(
    'accepted', coalesce(jsonb_array_length(a.body -> 'steps'), 0),
    'rejected', coalesce(a.body -> 'rejected', '[]'::jsonb))`,
});
