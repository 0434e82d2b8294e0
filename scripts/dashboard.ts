/** `deno task dashboard`: builds the reference dashboard into dashboard/dist/ (a static site). */
import { buildDashboard } from "../dashboard/build.ts";

await buildDashboard(console.log);
