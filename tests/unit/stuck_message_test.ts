/** The sentence a stuck project's status carries: the threshold in whole minutes when it is one. */
import assert from "node:assert/strict";
import { stuckMessage } from "../../supabase/functions/vm-api/actions/status.ts";

Deno.test("a stuck project's sentence names its status and the threshold, and sends to support", () => {
  assert.equal(
    stuckMessage("starting", 300),
    "This project has been starting for more than 5 minutes. Please contact support.",
  );
  assert.match(stuckMessage("stopping", 60), /stopping for more than 1 minute\. /);
  assert.match(stuckMessage("deleting", 1), /for more than 1 second\. /);
  assert.match(stuckMessage("provisioning", 90), /for more than 90 seconds\. /);
});
