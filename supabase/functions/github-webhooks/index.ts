import { flushBeforeUnload } from "../_shared/background.ts";
import { createBaseServices } from "../_shared/base_services.ts";
import { createGitHubWebhooks } from "./handler.ts";

const services = createBaseServices();
flushBeforeUnload(services.background);
Deno.serve(createGitHubWebhooks(services));
