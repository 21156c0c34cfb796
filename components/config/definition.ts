// Where a stack's fleet is defined: inline, as the value of the config key `nodefleet:fleet`, or in a
// file of the project that `nodefleet:fleetFile` names (docs/configuration.md, "A fleet in a file").
// Pulumi hands the whole stack config to the program and to the policy pack in one environment
// variable, which Linux caps (CONFIG_ENV_LIMIT); a file has no such ceiling. Everything that reads a
// fleet (the program, status, the shards' checks, the pipeline, promotion) reads it through here.
import * as fs from "node:fs";
import * as path from "node:path";
import { parse as parseYaml, YAMLParseError } from "yaml";

/** Linux's cap on one environment string (MAX_ARG_STRLEN), the variable's name and `=` included. */
export const CONFIG_ENV_LIMIT = 128 * 1024;

/** A fleet definition, read but not yet checked. */
export interface FleetDefinition {
    readonly raw: unknown;
    /** What messages name: the config key, or the file (relative to the project). */
    readonly source: string;
    /** The file, when the fleet is in one (relative to the project). */
    readonly file?: string;
}

/** A config key's value as the reader has it: the text (objects as JSON text) and whether it is encrypted. */
export type ConfigLookup = (key: "fleet" | "fleetFile") => { readonly value: string; readonly secret: boolean } | undefined;

export class FleetDefinitionError extends Error {
    constructor(message: string) {
        super(message);
        this.name = "FleetDefinitionError";
    }
}

/**
 * Why `file` (as written in nodefleet:fleetFile) cannot name a fleet file of the project, or
 * undefined: a relative path inside the project (it is reviewed and promoted with the rest of the
 * repository), ending in .yaml, .yml or .json.
 */
export function fleetFileReason(file: string): string | undefined {
    if (file === "" || /[\0\r\n]/.test(file)) return "not a file path";
    if (path.isAbsolute(file) || file.startsWith("~"))
        return "an absolute path: give a path relative to the project (the directory of Pulumi.yaml), inside it";
    const norm = path.posix.normalize(file.replace(/\\/g, "/"));
    if (norm === ".." || norm.startsWith("../")) return "outside the project: a fleet file is part of the repository, reviewed with it";
    if (!/\.(ya?ml|json)$/.test(norm)) return "not a .yaml, .yml or .json file";
    return undefined;
}

/** The fleet of a stack: from nodefleet:fleet, or from the file nodefleet:fleetFile names. Throws FleetDefinitionError. */
export function readFleetDefinition(lookup: ConfigLookup, projectDir: string): FleetDefinition {
    const inline = lookup("fleet");
    const fileKey = lookup("fleetFile");
    if (inline !== undefined && fileKey !== undefined)
        throw new FleetDefinitionError(
            "nodefleet:fleet and nodefleet:fleetFile are both set: define the fleet in one place (the file, for a large fleet)",
        );
    if (fileKey !== undefined) {
        if (fileKey.secret)
            throw new FleetDefinitionError("nodefleet:fleetFile: stored encrypted; it names a file of the project, in plain text");
        const file = fileKey.value;
        const reason = fleetFileReason(file);
        if (reason !== undefined) throw new FleetDefinitionError(`nodefleet:fleetFile: ${reason}`);
        return { raw: readFleetFile(path.join(projectDir, file), file), source: file, file };
    }
    if (inline === undefined)
        throw new FleetDefinitionError(
            `nodefleet:fleet: missing (or nodefleet:fleetFile, naming a file that holds it); see README "Configure a stack"`,
        );
    if (inline.secret)
        throw new FleetDefinitionError(
            "nodefleet:fleet: the fleet config holds an encrypted value; keep secrets in their own keys and reference them by name (…Secret fields)",
        );
    try {
        return { raw: JSON.parse(inline.value), source: "nodefleet:fleet" };
    } catch {
        throw new FleetDefinitionError(
            "nodefleet:fleet: not a structured value (set it as a YAML object under config: in Pulumi.<stack>.yaml)",
        );
    }
}

/** A fleet file's content; its parse errors give the line and column, never the text there. */
export function readFleetFile(full: string, shown: string): unknown {
    let text: string;
    try {
        if (!fs.statSync(full).isFile()) throw new FleetDefinitionError(`nodefleet:fleetFile: ${shown} is not a regular file`);
        text = fs.readFileSync(full, "utf8");
    } catch (e) {
        if (e instanceof FleetDefinitionError) throw e;
        throw new FleetDefinitionError(
            `nodefleet:fleetFile: ${shown}: ${(e as NodeJS.ErrnoException).code === "ENOENT" ? "no such file in the project" : `cannot be read (${(e as NodeJS.ErrnoException).code ?? "error"})`}`,
        );
    }
    let raw: unknown;
    try {
        raw = parseYaml(text, { uniqueKeys: true });
    } catch (e) {
        const at = e instanceof YAMLParseError && e.linePos ? ` at line ${e.linePos[0].line}, column ${e.linePos[0].col}` : "";
        throw new FleetDefinitionError(`${shown}: not valid YAML${at}${e instanceof YAMLParseError ? ` (${e.code})` : ""}`);
    }
    if (raw === null || typeof raw !== "object" || Array.isArray(raw))
        throw new FleetDefinitionError(`${shown}: holds no fleet (a map with hosts, nodes, releases…)`);
    return raw;
}

/**
 * The bytes of the environment string the language host and the policy pack get the stack config
 * in (`PULUMI_CONFIG=` and a JSON object of every key's value, secrets decrypted), from the values
 * by full key. Go's encoder writes <, > and & as six bytes each: counted so.
 */
export function configEnvBytes(values: Record<string, string>): number {
    const json = JSON.stringify(values);
    const goEscaped = (json.match(/[<>&\u2028\u2029]/g) ?? []).length * 5;
    return Buffer.byteLength("PULUMI_CONFIG=") + Buffer.byteLength(json) + goEscaped + 1;
}

/** The refusal (over the cap) or warning (past three quarters of it) for a stack config of `bytes`, or undefined. */
export function configSizeProblem(bytes: number): { readonly refused: boolean; readonly message: string } | undefined {
    if (bytes < 0.75 * CONFIG_ENV_LIMIT) return undefined;
    const kb = (n: number) => `${(n / 1024).toFixed(1)} KiB`;
    const refused = bytes > CONFIG_ENV_LIMIT;
    const what = refused ? `is ${kb(bytes)}, over` : `is ${kb(bytes)}, near`;
    return {
        refused,
        message:
            `the stack's config ${what} the ${kb(CONFIG_ENV_LIMIT)} Linux allows one environment variable: Pulumi hands it, secrets decrypted, to the program and the policy pack in one (PULUMI_CONFIG)` +
            `${refused ? ', so every pulumi run fails with "argument list too long" before nodefleet starts' : ""}. ` +
            'Move the fleet into a file of the project (nodefleet:fleetFile) and the node keys into a secrets directory (secretsDir); see docs/configuration.md, "A fleet in a file"',
    };
}

/**
 * The fleet of a stack file (Pulumi.<stack>.yaml) as parsed YAML: its `config` map, inline or from
 * the file its nodefleet:fleetFile names. For the readers that see the files of the project rather
 * than a stack's decrypted config (the shards' checks, the pipeline, promotion).
 */
export function fleetOfStackFile(config: Record<string, unknown> | null | undefined, projectDir: string): FleetDefinition {
    const lookup: ConfigLookup = (key) => {
        const v = config?.[`nodefleet:${key}`];
        if (v === undefined) return undefined;
        const secure = v !== null && typeof v === "object" && "secure" in v;
        return { value: typeof v === "string" ? v : JSON.stringify(v), secret: secure };
    };
    return readFleetDefinition(lookup, projectDir);
}
