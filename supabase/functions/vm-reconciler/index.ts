import { createServices } from "../_shared/services.ts";
import { createVmReconciler } from "./handler.ts";

Deno.serve(createVmReconciler(await createServices()));
