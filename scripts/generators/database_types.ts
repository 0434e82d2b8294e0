/**
 * The `Database` type of the exposed schemas, in the shape `supabase gen types typescript` gives
 * (Tables with Row/Insert/Update/Relationships, Views, Functions with Args/Returns, Enums,
 * CompositeTypes), read from a live database's catalog. `createClient<Database>()` then types
 * every `.from()` and `.rpc()` the dashboard makes. Written by `deno task gen-types`; a test
 * regenerates it from the migrated test database and compares.
 */
import type postgres from "postgres";

interface Column {
  relation: string;
  name: string;
  type: string;
  nullable: boolean;
  /** Insert may leave it out: a default, an identity, or nullable. */
  optional: boolean;
  /** GENERATED ALWAYS AS (...): never written. */
  generated: boolean;
}

interface Relation {
  name: string;
  kind: "table" | "view";
}

interface ForeignKey {
  relation: string;
  name: string;
  columns: string[];
  one_to_one: boolean;
  referenced_relation: string;
  referenced_columns: string[];
}

interface FunctionArg {
  name: string;
  type: string;
  optional: boolean;
}

interface Fn {
  name: string;
  args: FunctionArg[];
  returns: string;
  returns_set: boolean;
  /** RETURNS TABLE (...) or OUT parameters: the row's columns. */
  out_columns: { name: string; type: string }[] | null;
}

interface EnumType {
  name: string;
  labels: string[];
}

interface CompositeType {
  name: string;
  attributes: { name: string; type: string }[];
}

/** A type as the catalog names it: `schema.name`, arrays as `schema.name[]`. */
const TYPE_NAME = `
  case when t.typcategory = 'A'
    then et.typnamespace::regnamespace::text || '.' || et.typname || '[]'
    else t.typnamespace::regnamespace::text || '.' || t.typname
  end`;

export async function generateDatabaseTypes(
  sql: postgres.Sql,
  schemas: readonly string[],
): Promise<string> {
  const domains = new Map(
    (await sql<{ name: string; base: string }[]>`
      select t.typnamespace::regnamespace::text || '.' || t.typname as name,
        bt.typnamespace::regnamespace::text || '.' || bt.typname as base
      from pg_type t join pg_type bt on bt.oid = t.typbasetype
      where t.typtype = 'd'`).map((d) => [d.name, d.base]),
  );
  const enums = await sql<(EnumType & { schema: string })[]>`
    select t.typnamespace::regnamespace::text as schema, t.typname as name,
      array_agg(e.enumlabel order by e.enumsortorder) as labels
    from pg_type t join pg_enum e on e.enumtypid = t.oid
    group by 1, 2 order by 1, 2`;
  const enumLabels = new Map(enums.map((e) => [`${e.schema}.${e.name}`, e.labels]));

  const tsType = (pgType: string): string => {
    if (pgType.endsWith("[]")) return `${tsType(pgType.slice(0, -2))}[]`;
    const base = domains.get(pgType);
    if (base) return tsType(base);
    const [schema, name] = pgType.split(".") as [string, string];
    if (schema === "pg_catalog") return SCALARS[name] ?? "unknown";
    const labels = enumLabels.get(pgType);
    if (labels) {
      return schemas.includes(schema)
        ? `Database[${q(schema)}]["Enums"][${q(name)}]`
        : labels.map(q).join(" | ");
    }
    if (schemas.includes(schema)) {
      return `Database[${q(schema)}]["CompositeTypes"][${q(name)}]`;
    }
    return "unknown";
  };

  let out = HEADER + "export type Database = {\n";
  for (const schema of [...schemas].sort()) {
    const relations = await sql<Relation[]>`
      select c.relname as name, case when c.relkind in ('r', 'p', 'f') then 'table' else 'view' end
        as kind
      from pg_class c
      where c.relnamespace = ${schema}::regnamespace and c.relkind in ('r', 'p', 'f', 'v', 'm')
        and not c.relispartition
      order by c.relname collate "C"`;
    const columns = await sql<Column[]>`
      select c.relname as relation, a.attname as name,
        ${sql.unsafe(TYPE_NAME)} as type,
        not a.attnotnull as nullable,
        (a.atthasdef or a.attidentity <> '' or not a.attnotnull) as optional,
        a.attgenerated <> '' as generated
      from pg_attribute a
      join pg_class c on c.oid = a.attrelid
      join pg_type t on t.oid = a.atttypid
      left join pg_type et on et.oid = t.typelem
      where c.relnamespace = ${schema}::regnamespace and c.relkind in ('r', 'p', 'f', 'v', 'm')
        and a.attnum > 0 and not a.attisdropped
      order by a.attname collate "C"`;
    const foreignKeys = await sql<ForeignKey[]>`
      select c.relname as relation, k.conname as name,
        array(select attname from unnest(k.conkey) with ordinality u(n, i)
          join pg_attribute on attrelid = k.conrelid and attnum = u.n order by u.i) as columns,
        exists (
          select 1 from pg_constraint uk
          where uk.conrelid = k.conrelid and uk.contype in ('p', 'u')
            and uk.conkey::int[] @> k.conkey::int[] and uk.conkey::int[] <@ k.conkey::int[]
        ) as one_to_one,
        r.relname as referenced_relation,
        array(select attname from unnest(k.confkey) with ordinality u(n, i)
          join pg_attribute on attrelid = k.confrelid and attnum = u.n order by u.i)
          as referenced_columns
      from pg_constraint k
      join pg_class c on c.oid = k.conrelid
      join pg_class r on r.oid = k.confrelid
      -- Embedding (and so a relationship) is only possible within one exposed schema.
      where k.contype = 'f' and c.relnamespace = ${schema}::regnamespace
        and r.relnamespace = c.relnamespace
      order by k.conname collate "C"`;
    const functions = await sql<Fn[]>`
      select p.proname as name,
        array(
          select jsonb_build_object(
            'name', coalesce(p.proargnames[a.i], ''),
            'type', (select ${sql.unsafe(TYPE_NAME)} from pg_type t
              left join pg_type et on et.oid = t.typelem where t.oid = a.type_oid),
            -- Defaults belong to the last input arguments.
            'optional', a.i > p.pronargs - p.pronargdefaults
          )
          from unnest(coalesce(p.proallargtypes, p.proargtypes::oid[])) with ordinality
            a(type_oid, i)
          where coalesce(p.proargmodes[a.i], 'i') in ('i', 'b', 'v')
          order by a.i
        ) as args,
        (select ${sql.unsafe(TYPE_NAME)} from pg_type t left join pg_type et on et.oid = t.typelem
          where t.oid = p.prorettype) as returns,
        p.proretset as returns_set,
        case when p.proargmodes && array['o', 'b', 't']::"char"[] then array(
          select jsonb_build_object('name', p.proargnames[a.i], 'type', (
            select ${sql.unsafe(TYPE_NAME)} from pg_type t
            left join pg_type et on et.oid = t.typelem where t.oid = a.type_oid))
          from unnest(p.proallargtypes) with ordinality a(type_oid, i)
          where p.proargmodes[a.i] in ('o', 'b', 't')
          order by a.i
        ) end as out_columns
      from pg_proc p
      where p.pronamespace = ${schema}::regnamespace and p.prokind = 'f'
        and p.prorettype not in ('trigger'::regtype, 'event_trigger'::regtype)
      order by p.proname collate "C", p.oid`;
    const schemaEnums = enums.filter((e) => e.schema === schema);
    const composites = await sql<CompositeType[]>`
      select t.typname as name,
        array(select jsonb_build_object('name', a.attname, 'type', (
          select ${sql.unsafe(TYPE_NAME)} from pg_type t
          left join pg_type et on et.oid = t.typelem where t.oid = a.atttypid))
          from pg_attribute a where a.attrelid = t.typrelid and a.attnum > 0
            and not a.attisdropped order by a.attnum) as attributes
      from pg_type t join pg_class c on c.oid = t.typrelid
      where t.typnamespace = ${schema}::regnamespace and c.relkind = 'c'
      order by t.typname collate "C"`;

    const columnsOf = (relation: string) => columns.filter((c) => c.relation === relation);
    const field = (c: Column, optional = false) =>
      `${key(c.name)}${optional ? "?" : ""}: ${nullable(tsType(c.type), c.nullable)}`;
    const table = (r: Relation) => {
      const cols = columnsOf(r.name);
      const write = (optional: (c: Column) => boolean) =>
        object(cols.map((c) => c.generated ? `${key(c.name)}?: never` : field(c, optional(c))));
      const relationships = foreignKeys.filter((k) => k.relation === r.name).map((k) =>
        `{ foreignKeyName: ${q(k.name)}; columns: [${k.columns.map(q).join(", ")}]; ` +
        `isOneToOne: ${k.one_to_one}; referencedRelation: ${q(k.referenced_relation)}; ` +
        `referencedColumns: [${k.referenced_columns.map(q).join(", ")}] }`
      );
      return `${key(r.name)}: {
        Row: ${object(cols.map((c) => field(c)))}
        Insert: ${write((c) => c.optional)}
        Update: ${write(() => true)}
        Relationships: [${relationships.join(", ")}]
      }`;
    };
    const view = (r: Relation) =>
      `${key(r.name)}: { Row: ${
        object(columnsOf(r.name).map((c) => field(c)))
      }; Relationships: [] }`;

    const fnReturns = (fn: Fn) => {
      const row = fn.out_columns
        ? object(fn.out_columns.map((c) => `${key(c.name)}: ${tsType(c.type)}`))
        : fn.returns === "pg_catalog.void"
        ? "undefined"
        : tsType(fn.returns);
      return fn.returns_set ? `${row}[]` : row;
    };
    const fnArgs = (fn: Fn) =>
      fn.args.length === 0
        ? "Record<PropertyKey, never>"
        : object(fn.args.map((a) => `${key(a.name)}${a.optional ? "?" : ""}: ${tsType(a.type)}`));
    const byFunction = Map.groupBy(functions, (fn) => fn.name);
    const fns = [...byFunction].map(([name, overloads]) =>
      `${key(name)}: ${
        overloads.map((fn) => `{ Args: ${fnArgs(fn)}; Returns: ${fnReturns(fn)} }`).join(" | ")
      }`
    );

    out += `${key(schema)}: {
      Tables: ${section(relations.filter((r) => r.kind === "table").map(table))}
      Views: ${section(relations.filter((r) => r.kind === "view").map(view))}
      Functions: ${section(fns)}
      Enums: ${section(schemaEnums.map((e) => `${key(e.name)}: ${e.labels.map(q).join(" | ")}`))}
      CompositeTypes: ${
      section(composites.map((c) =>
        `${q(c.name)}: ${
          object(c.attributes.map((a) =>
            `${q(a.name)}: ${nullable(tsType(a.type), true)}`
          ))
        }`
      ))
    }
    }\n`;
  }
  return await format(out + "}\n" + HELPERS);
}

/** pg_catalog types as supabase gen types maps them. */
const SCALARS: Record<string, string> = {
  bool: "boolean",
  int2: "number",
  int4: "number",
  int8: "number",
  float4: "number",
  float8: "number",
  numeric: "number",
  oid: "number",
  json: "Json",
  jsonb: "Json",
  record: "Record<string, unknown>",
  void: "undefined",
  ...Object.fromEntries(
    [
      "bytea",
      "bpchar",
      "varchar",
      "text",
      "citext",
      "name",
      "char",
      "uuid",
      "date",
      "time",
      "timetz",
      "timestamp",
      "timestamptz",
      "interval",
      "inet",
      "cidr",
      "macaddr",
      "tsvector",
      "tsquery",
      "regclass",
      "regtype",
    ].map((name) => [name, "string"]),
  ),
};

const q = (name: string) => JSON.stringify(name);
const nullable = (type: string, isNullable: boolean) => isNullable ? `${type} | null` : type;
/** An object key, quoted only when it is not an identifier (as supabase gen types writes them). */
const key = (name: string) => /^[A-Za-z_$][\w$]*$/.test(name) ? name : q(name);
const object = (fields: string[]) => `{ ${fields.join("; ")} }`;
const section = (entries: string[]) =>
  entries.length ? `{ ${entries.join("; ")} }` : "{ [_ in never]: never }";

const HEADER =
  `// Generated by \`deno task gen-types\` from the database's catalog: do not edit by hand.

export type Json =
  | string
  | number
  | boolean
  | null
  | { [key: string]: Json | undefined }
  | Json[];

`;

const HELPERS = `
type DefaultSchema = Database["public"];

export type Tables<T extends keyof (DefaultSchema["Tables"] & DefaultSchema["Views"])> =
  (DefaultSchema["Tables"] & DefaultSchema["Views"])[T] extends { Row: infer R } ? R : never;
export type TablesInsert<T extends keyof DefaultSchema["Tables"]> =
  DefaultSchema["Tables"][T]["Insert"];
export type TablesUpdate<T extends keyof DefaultSchema["Tables"]> =
  DefaultSchema["Tables"][T]["Update"];
export type Enums<T extends keyof DefaultSchema["Enums"]> = DefaultSchema["Enums"][T];
`;

/** deno fmt's layout, so the file is stable and passes `deno fmt --check`. */
async function format(source: string): Promise<string> {
  const child = new Deno.Command("deno", {
    args: ["fmt", "--ext=ts", "--line-width=100", "-"],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(source));
  await writer.close();
  const { code, stdout, stderr } = await child.output();
  if (code !== 0) throw new Error(`deno fmt: ${new TextDecoder().decode(stderr)}`);
  return new TextDecoder().decode(stdout);
}
