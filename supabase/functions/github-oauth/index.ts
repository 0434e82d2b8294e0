import { flushBeforeUnload } from "../_shared/background.ts";
import { createBaseServices } from "../_shared/base_services.ts";
import { createGitHubOAuth } from "./handler.ts";

const services = createBaseServices();
flushBeforeUnload(services.background);
Deno.serve(createGitHubOAuth(services));
