import { createBaseServices } from "../_shared/services.ts";
import { createVmReporter } from "./handler.ts";

Deno.serve(createVmReporter(createBaseServices()));
