import { flushBeforeUnload } from "../_shared/background.ts";
import { createServices } from "../_shared/services.ts";
import { createVmApi } from "./handler.ts";

const services = await createServices();
flushBeforeUnload(services.background);
Deno.serve(createVmApi(services));
