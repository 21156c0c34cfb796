// How a fleet config's problems are told: zod's issues turned into "path: reason" lines that never
// show a secret field's value, and the error that carries them all.
import { z } from "zod";
import { formatPath, isSecretField } from "./paths";

export class FleetConfigError extends Error {
    /** `source`: where the fleet is defined (the config key nodefleet:fleet, or the fleet file). */
    constructor(
        source: string,
        readonly issues: readonly string[],
    ) {
        super(
            `invalid ${source === "nodefleet:fleet" ? "nodefleet:fleet config" : `fleet definition ${source}`}:\n${issues.map((i) => `  - ${i}`).join("\n")}`,
        );
        this.name = "FleetConfigError";
    }
}

const EXPECTED: Record<string, string> = {
    number: "a number",
    int: "a whole number",
    string: "a string",
    boolean: "true or false",
    array: "a list",
    object: "a map of keys",
    record: "a map of names to values",
};

/** What a config value is, for "expected X, got Y"; a secret field's value is never shown. */
function describeInput(input: unknown, secret: boolean): string {
    if (input === null) return "null";
    if (Array.isArray(input)) return "a list";
    switch (typeof input) {
        case "string":
            if (secret) return "a string";
            return `the string ${JSON.stringify(input.length > 40 ? `${input.slice(0, 40)}…` : input)}`;
        case "number":
            return secret ? "a number" : `the number ${input}`;
        case "boolean":
            return secret ? "a boolean" : String(input);
        case "object":
            return "a map of keys";
        default:
            return typeof input;
    }
}

/**
 * A failed union of versioned variants (the sequencer's): the issues of the one branch whose
 * `version` matched, else the union's own message at `.version`. Other unions pass through.
 */
export function unionBranch(i: z.core.$ZodIssue): z.core.$ZodIssue[] {
    if (i.code !== "invalid_union" || i.errors.length === 0) return [i];
    if (i.input === undefined)
        return [{ code: "invalid_type", expected: "object", input: undefined, path: i.path, message: "required" } as z.core.$ZodIssue];
    const matched = i.errors.filter((branch) => !branch.some((e) => e.path.length === 1 && e.path[0] === "version"));
    if (matched.length === 1)
        return matched[0]!.map((e) => ({ ...e, path: [...i.path, ...e.path] }) as z.core.$ZodIssue).flatMap(unionBranch);
    if (matched.length === 0 && i.errors.every((b) => b.some((e) => e.path[0] === "version")))
        return [{ ...i, path: [...i.path, "version"], errors: [] } as z.core.$ZodIssue];
    return [i];
}

export function zodIssue(i: z.core.$ZodIssue): string {
    const at = formatPath(i.path);
    switch (i.code) {
        case "unrecognized_keys":
            return `${at}: unknown key${i.keys.length > 1 ? "s" : ""} ${i.keys.join(", ")}`;
        case "invalid_type":
            if (i.input === undefined) return `${at}: required`;
            return `${at}: expected ${EXPECTED[i.expected] ?? i.expected}, got ${describeInput(i.input, isSecretField(i.path))}`;
        case "invalid_key":
            // A map key (host or release name) that breaks the key schema: its own message.
            return `${at}: ${i.issues.map((k) => k.message).join("; ")}`;
        default:
            return `${at}: ${i.message}`;
    }
}
