/** `deno task dashboard`: builds the reference dashboard into dashboard/dist/ (a static site). */
import { buildDashboard } from "./lib/dashboard_build.ts";

await buildDashboard(console.log);
