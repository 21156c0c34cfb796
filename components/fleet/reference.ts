// The fleet config's documentation, generated from the zod schema (schema.ts): a JSON Schema for
// editors (zod's own export) and a Markdown reference for operators, one table per object.
// `scripts/docs.sh` writes both into docs/, with the fault table's page and the dashboard; a unit
// test fails when they are not current.
import { z } from "zod";
import { fleetSpec } from "../config/schema";
import { DASHBOARD_FILE, renderDashboard } from "../monitoring/dashboard";
import { FAULT_TABLE } from "../config/faults";
import { FAULT_MEANINGS } from "../monitoring/fault-meanings";

export const SCHEMA_FILE = "docs/fleet.schema.json";
export const REFERENCE_FILE = "docs/configuration.md";
export const FAULTS_FILE = "docs/faults.md";

/** The subset of JSON Schema that zod's export produces for the fleet. */
interface Json {
    readonly type?: string | readonly string[];
    readonly title?: string;
    readonly description?: string;
    readonly default?: unknown;
    readonly const?: unknown;
    readonly enum?: readonly unknown[];
    readonly pattern?: string;
    readonly minimum?: number;
    readonly maximum?: number;
    readonly minItems?: number;
    readonly minLength?: number;
    readonly items?: Json;
    readonly properties?: Readonly<Record<string, Json>>;
    readonly required?: readonly string[];
    readonly additionalProperties?: Json | boolean;
    readonly propertyNames?: Json;
    readonly oneOf?: readonly Json[];
    readonly anyOf?: readonly Json[];
}

/** The JSON Schema of the `nodefleet:fleet` value, as written (defaults not yet applied). */
export function fleetJsonSchema(): Record<string, unknown> {
    return {
        ...z.toJSONSchema(fleetSpec, { io: "input", unrepresentable: "throw" }),
        $id: "https://nodefleet.invalid/fleet.schema.json",
        title: "nodefleet fleet (stack config key nodefleet:fleet)",
    };
}

/** Every generated docs file and its text, as `scripts/docs.sh` writes them and the unit test expects them. */
export function generatedDocs(): Record<string, string> {
    return {
        [SCHEMA_FILE]: `${JSON.stringify(fleetJsonSchema(), null, 2)}\n`,
        [REFERENCE_FILE]: configReference(),
        [DASHBOARD_FILE]: renderDashboard(),
        [FAULTS_FILE]: faultsPage(),
    };
}

/** A cell of prose: `<unit>` outside code spans shown as written, not taken for an HTML tag. */
function prose(text: string): string {
    return cell(
        text
            .split("`")
            .map((part, i) => (i % 2 === 0 ? part.replace(/</g, "&lt;") : part))
            .join("`"),
    );
}

/** The fault table (hostfiles/faults.json) as operators read it: what status and the alerts say, and the fix. */
export function faultsPage(): string {
    const unknown = Object.keys(FAULT_MEANINGS).filter((c) => !(c in FAULT_TABLE));
    if (unknown.length > 0)
        throw new Error(`components/monitoring/fault-meanings.ts: ${unknown.join(", ")}: not a code of hostfiles/faults.json`);
    const rows = Object.entries(FAULT_TABLE).map(([code, f]) => {
        const meaning = FAULT_MEANINGS[code];
        if (meaning === undefined)
            throw new Error(`components/monitoring/fault-meanings.ts: ${code}: no meaning for this code of hostfiles/faults.json`);
        const alert = f.alert === false ? `none: ${f.note ?? "status only"}` : `\`${f.for}\``;
        return `| \`${code}\` | ${f.severity} | ${cell(alert)} | ${prose(meaning)} | ${prose(f.remedy)} |`;
    });
    return [
        "<!-- Generated from hostfiles/faults.json by scripts/docs.sh: do not edit by hand. -->",
        "# Faults",
        "",
        "Every diagnosis `nodefleet status` prints and each host's health timer writes as",
        "`nodefleet_diagnosis{code}`. The host tools, status, the alert rules and this page read one table,",
        "`hostfiles/faults.json`, so an alert and status give the same remedy. *Alert after*: how long the",
        "diagnosis must last before its alert fires (long for what the spec calls expected or ignorable).",
        "An `error` makes `nodefleet status` exit 1; a `warning` does not. In a remedy, `<unit>` is the",
        "node's unit and `<p2p port>` its execution client's peer port, as status prints them.",
        "",
        "| fault | severity | alert after | what it means | remedy |",
        "|---|---|---|---|---|",
        ...rows,
        "",
    ].join("\n");
}

/** One table of the reference: the fields of one object. */
interface Section {
    readonly heading: string;
    readonly about?: string;
    readonly rows: string[];
}

/** The reference's opening: where a fleet is written, and what loading it checks beyond each field. */
const PREAMBLE: readonly string[] = [
    "<!-- Generated from components/config/schema.ts by scripts/docs.sh: do not edit by hand. -->",
    "# Configuration reference",
    "",
    "A stack's fleet is the value of the config key `nodefleet:fleet` in `Pulumi.<stack>.yaml`, or the",
    "content of the project file the key `nodefleet:fleetFile` names (below). Secrets (SSH keys,",
    "node keys) are never written there: a `…Secret` field names another config key, set with",
    "`pulumi config set --secret <name>` (or a file of the fleet's `secretsDir`). Editors can check",
    "the shape with [fleet.schema.json](fleet.schema.json) (in VS Code: `yaml.schemas`).",
    "",
    "## A fleet in a file",
    "",
    "Pulumi hands a stack's whole config, secrets decrypted, to the program and to the policy pack",
    "in one environment variable, and Linux caps one variable at 128 KiB: an inline fleet of about",
    "170 nodes (fewer with longer entries), or a few hundred node keys, and every `pulumi` run fails",
    'with "argument list too long" before nodefleet starts. A fleet of that size is written in a file',
    "of the project instead, reviewed in pull requests like the rest, and its keys in a directory of",
    "the machine that runs Pulumi:",
    "",
    "```yaml",
    "# Pulumi.prod.yaml",
    "config:",
    "  nodefleet:fleetFile: fleets/prod.yaml   # relative to the project, inside it: .yaml, .yml or .json",
    "# fleets/prod.yaml: what nodefleet:fleet would hold",
    "secretsDir: ~/.nodefleet/prod              # outside the project; mode 700, each file mode 600",
    "hosts: {...}",
    "nodes: [...]",
    "```",
    "",
    "- Exactly one of `nodefleet:fleet` and `nodefleet:fleetFile` is set. The program, `nodefleet",
    "  status`, the shards' checks, the pipeline (`scripts/ci/`) and promotion (`scripts/promote.mjs`,",
    "  which then edits the fleet file) all read the fleet where it is; a change to a fleet file",
    "  previews the stacks that name it. Two stacks may not share one file when promoting between them.",
    "- A secret the fleet names is a config key of the stack or, with `secretsDir`, a file of that",
    "  name there (its value, one trailing newline dropped); never both. Files others can read, a",
    "  directory others can open and a directory inside the project are refused. In the pipeline,",
    "  `scripts/ci/stack.sh` writes each `NODEFLEET_SECRET_<name>` there. `nodefleet status` on a",
    "  machine without the directory checks the names it cannot read as present.",
    "- `scripts/nodefleet check --stack S` sizes the config as Pulumi would hand it over and refuses,",
    "  with this fix, one over the cap (the pipeline runs it before each preview and `up`); the",
    "  program warns from three quarters of it.",
    "",
    "Beyond each field's own rules, loading the stack checks (components/config/fleet.ts), naming",
    "the config path of each problem and never the value of a secret:",
    "- every named secret is set, set as a secret, and well-formed; no key is used by two nodes",
    "  (a validator key on two machines would double-sign);",
    "- node names are unique; every node's host exists and every host runs a node; no two hosts",
    "  are the same machine (address and SSH port);",
    "- no two nodes on one host bind the same port;",
    "- each node names a release, with exactly one of sha256 or sha256File, and the file has an",
    "  entry for the URL's file name;",
    "- a storage node with boot nodes has a networkEnrAddress;",
    "- each host meets the sum of its nodes' hardware targets (`hardwareCheck`); unpinned host",
    "  keys are reported.",
    "",
];

/** The Markdown configuration reference. */
export function configReference(): string {
    const sections: Section[] = [];
    walk(fleetJsonSchema() as Json, "nodefleet:fleet", sections);
    const out = [...PREAMBLE];
    for (const s of sections) {
        out.push(`## ${s.heading}`, "");
        if (s.about) out.push(s.about, "");
        out.push("| field | type | default | description |", "|---|---|---|---|", ...s.rows, "");
    }
    return out.join("\n");
}

/** Adds the object at `path` (and the objects below it) to `sections`. */
function walk(schema: Json, path: string, sections: Section[]): void {
    const variants = schema.oneOf ?? schema.anyOf;
    if (variants && variants.every((v) => v.properties)) {
        for (const v of variants) walk(v, `${path} (${discriminator(v)})`, sections);
        return;
    }
    if (!schema.properties) return;
    const rows: string[] = [];
    const below: [Json, string][] = [];
    const required = new Set(schema.required ?? []);
    const base = path.replace(/ \(.*\)$/, "");
    for (const [key, field] of Object.entries(schema.properties)) {
        const inner = objectBelow(field);
        if (inner) below.push([inner.schema, `${base}.${key}${inner.suffix}`]);
        const need = required.has(key) ? " (required)" : "";
        rows.push(
            `| \`${key}\`${need} | ${cell(typeOf(field))} | ${field.default === undefined ? "" : cell(`\`${JSON.stringify(field.default)}\``)} | ${cell(field.description ?? "")} |`,
        );
    }
    sections.push({ heading: `\`${path}\``, about: schema.description, rows });
    for (const [s, p] of below) walk(s, p, sections);
}

/** The object a field holds, directly or as the items of a list or the values of a map. */
function objectBelow(field: Json): { schema: Json; suffix: string } | undefined {
    const asObject = (s: Json | boolean | undefined) =>
        typeof s === "object" && (s.properties !== undefined || (s.oneOf ?? s.anyOf)?.some((v) => v.properties !== undefined))
            ? s
            : undefined;
    const held: [Json | undefined, string][] = [
        [asObject(field), ""],
        [asObject(field.items), "[]"],
        [asObject(field.additionalProperties), ".<name>"],
    ];
    const [schema, suffix] = held.find(([s]) => s !== undefined) ?? [];
    return schema === undefined ? undefined : { schema, suffix: suffix! };
}

/** `kind: aws`: the field whose value tells the variants of a union apart. */
function discriminator(variant: Json): string {
    // The discriminating field: kind, role or version, by its literal or (the sequencer's 2.0.x pattern) its title.
    const props = variant.properties ?? {};
    const named = (f: Json) => f.const ?? (f as Json & { title?: string }).title;
    const key =
        ["kind", "role", "version"].find((k) => props[k] !== undefined && named(props[k]!) !== undefined) ??
        Object.keys(props).find((k) => props[k]!.const !== undefined);
    return key === undefined ? "variant" : `${key}: ${String(named(props[key]!))}`;
}

function typeOf(s: Json): string {
    const variants = s.oneOf ?? s.anyOf;
    if (variants)
        return variants.every((v) => v.properties)
            ? "object, by " + discriminator(variants[0]!).split(":")[0]
            : variants.map(typeOf).join(" or ");
    if (s.const !== undefined) return `\`${JSON.stringify(s.const)}\``;
    if (s.enum) return `one of ${s.enum.map((e) => `\`${String(e)}\``).join(", ")}`;
    if (Array.isArray(s.type)) return s.type.join(" or ");
    switch (s.type) {
        case "string":
            return s.title ?? (s.pattern ? `string matching \`${s.pattern}\`` : "string");
        case "integer":
        case "number":
            return `${s.type}${range(s)}`;
        case "boolean":
            return "boolean";
        case "array":
            return `list of ${s.items ? typeOf(s.items) : "values"}${s.minItems ? ` (at least ${s.minItems})` : ""}`;
        case "object":
            if (s.properties) return "object";
            if (typeof s.additionalProperties === "object") return `map: name → ${typeOf(s.additionalProperties)}`;
            return "object";
        default:
            return s.title ?? "any";
    }
}

/** ` 1–65535`, ` ≥ 0`; zod's bounds of a safe integer are no bound to an operator. */
function range(s: Json): string {
    const min = s.minimum === -Number.MAX_SAFE_INTEGER ? undefined : s.minimum;
    const max = s.maximum === Number.MAX_SAFE_INTEGER ? undefined : s.maximum;
    if (min !== undefined && max !== undefined) return ` ${min}–${max}`;
    if (min !== undefined) return ` ≥ ${min}`;
    if (max !== undefined) return ` ≤ ${max}`;
    return "";
}

/** Text safe inside a Markdown table cell. */
function cell(text: string): string {
    return text.replace(/\|/g, "\\|").replace(/\n/g, " ");
}
