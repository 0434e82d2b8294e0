import { deleteSecret as contract } from "../../_contract/vm_api.ts";
import { defineAction } from "../action.ts";

export const deleteSecret = defineAction(
  contract,
  (ctx, input) =>
    ctx.asUser((sql) => sql`private.vm_delete_secret(${input.project_id}, ${input.name})`),
);
