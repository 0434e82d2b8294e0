/**
 * The Data API settings of `supabase/config.toml` `[api]`, read the way the Supabase CLI reads them
 * (its defaults where a key is absent), so the local PostgREST exposes exactly what hosted will.
 */
import { parse } from "smol-toml";
import { z } from "zod";

const CONFIG_TOML = new URL("../../supabase/config.toml", import.meta.url);

const ApiSection = z.object({
  schemas: z.array(z.string().min(1)).default(["public", "graphql_public"]),
  extra_search_path: z.array(z.string().min(1)).default(["public", "extensions"]),
  max_rows: z.number().int().positive().default(1000),
});

export type ApiSettings = z.infer<typeof ApiSection>;

export async function readApiSettings(path: URL | string = CONFIG_TOML): Promise<ApiSettings> {
  const toml = parse(await Deno.readTextFile(path));
  const parsed = ApiSection.safeParse(toml.api ?? {});
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `api.${i.path.join(".")}: ${i.message}`);
    throw new Error(`supabase/config.toml: ${problems.join("; ")}`);
  }
  return parsed.data;
}
