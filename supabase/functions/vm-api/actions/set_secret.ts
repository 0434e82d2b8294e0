import { setSecret as contract } from "../../_contract/vm_api.ts";
import { defineAction } from "../action.ts";
import { sealedValueHex } from "../repository.ts";

// The value is sealed here: the SQL call, its parameters and the database see only ciphertext.
export const setSecret = defineAction(contract, async (ctx, input) => {
  const sealed = await sealedValueHex(ctx, input.value);
  return ctx.asUser((sql) =>
    sql`private.vm_set_secret(${input.project_id}, ${input.name}, decode(${sealed}, 'hex'))`
  );
});
