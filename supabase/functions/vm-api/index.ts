import { createServices } from "../_shared/services.ts";
import { createVmApi } from "./handler.ts";

Deno.serve(createVmApi(await createServices()));
