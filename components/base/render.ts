// Template machinery shared by every rendered host file. Handlebars in strict mode
// (a missing variable is an error, not an empty string) with HTML escaping off:
// these are shell, nftables, TOML and unit files. Values enter a file only through
// a quoting helper that fits its context.
import * as fs from "node:fs";
import * as path from "node:path";
import * as crypto from "node:crypto";
import Handlebars from "handlebars";

/**
 * What a value in an environment file read by both systemd and `docker --env-file` (which has no
 * quoting) may hold: characters both read literally, unquoted. No quotes, backslashes, `$`, `#`,
 * `;` or white space; URLs' `?&~!*()[]` are fine. `envval` below enforces it; the config
 * checks URLs against it (values/validators.ts).
 */
export const ENV_FILE_VALUE = /^[A-Za-z0-9_@%+=:,./?&~!*()[\]-]*$/;

function findTemplatesDir(): string {
    // Works from components/ (ts-node) and from dist/components/ (compiled tests).
    for (let dir = __dirname; dir !== path.dirname(dir); dir = path.dirname(dir)) {
        const candidate = path.join(dir, "templates");
        if (fs.existsSync(path.join(dir, "package.json")) && fs.existsSync(candidate)) return candidate;
    }
    throw new Error(`templates/ not found above ${__dirname}`);
}

export const TEMPLATES_DIR = findTemplatesDir();

/** Static files nodefleet installs on hosts (scripts), beside templates/. */
export const HOSTFILES_DIR = path.join(path.dirname(TEMPLATES_DIR), "hostfiles");
const hostFiles = new Map<string, string>();
/** A file of hostfiles/, read once per program run (every node of a role embeds the same tools). */
export function hostFile(name: string): string {
    let text = hostFiles.get(name);
    if (text === undefined) {
        text = fs.readFileSync(path.join(HOSTFILES_DIR, name), "utf8");
        hostFiles.set(name, text);
    }
    return text;
}

/** A single POSIX shell word: safe for any value, including quotes, newlines, $() and backticks. */
export function shellWord(value: string): string {
    if (/^[A-Za-z0-9_@%+=:,./-]+$/.test(value)) return value;
    return `'${value.replace(/'/g, `'"'"'`)}'`;
}

/** A TOML basic string with every control character escaped. */
export function tomlString(value: string): string {
    let out = '"';
    for (const ch of value) {
        const code = ch.codePointAt(0)!;
        if (ch === '"') out += '\\"';
        else if (ch === "\\") out += "\\\\";
        else if (ch === "\n") out += "\\n";
        else if (ch === "\t") out += "\\t";
        else if (ch === "\r") out += "\\r";
        else if (code < 0x20 || code === 0x7f) out += `\\u${code.toString(16).padStart(4, "0")}`;
        else out += ch;
    }
    return out + '"';
}

/**
 * One word of a systemd Exec*= line: double-quoted with C escapes when needed, `%` doubled
 * (specifiers) and `$` doubled (variable expansion), so a value is passed as exactly one argument.
 */
export function unitWord(value: string): string {
    if (/^[A-Za-z0-9_@+=:,./-]+$/.test(value)) return value;
    let out = '"';
    for (const ch of value) {
        const code = ch.codePointAt(0)!;
        if (ch === '"' || ch === "\\") out += `\\${ch}`;
        else if (ch === "%") out += "%%";
        else if (ch === "$") out += "$$";
        else if (ch === "\n") out += "\\n";
        else if (ch === "\t") out += "\\t";
        else if (code < 0x20 || code === 0x7f) out += `\\x${code.toString(16).padStart(2, "0")}`;
        else out += ch;
    }
    return out + '"';
}

/** An nftables double-quoted string (comments); nft has no escapes, so quotes are dropped. */
export function nftString(value: string): string {
    return `"${value.replace(/["\\\n\r]/g, "").slice(0, 120)}"`;
}

// Characters no rendered line may carry: a newline or another control or line-separator
// character would start a new command, setting or rule. The config refuses them in every string;
// these helpers refuse them again at the point of use.
const LINE_BREAKING = /[\p{Cc}\p{Zl}\p{Zp}]/u;

function singleLine(value: string, context: string): string {
    if (LINE_BREAKING.test(value)) throw new Error(`a value for a ${context} holds a control or line-separator character`);
    return value;
}

/** Text inside a `#` comment (shell, TOML, systemd, nftables): one line, whatever the value holds. */
export function commentText(value: string): string {
    return value.replace(new RegExp(LINE_BREAKING.source, "gu"), "?");
}

/** Text inside a shell double-quoted string: `\`, `"`, `$` and backquotes escaped. */
export function doubleQuoted(value: string): string {
    return singleLine(value, "double-quoted shell string").replace(/[\\"$`]/g, (c) => `\\${c}`);
}

/**
 * The value of a systemd setting other than a command line (User=, WorkingDirectory=,
 * Description=, ...): one line, `%` doubled (specifiers), no trailing backslash (a continuation).
 */
export function unitValue(value: string): string {
    if (/\\$/.test(value)) throw new Error("a systemd setting value must not end with a backslash");
    return singleLine(value, "systemd setting").replace(/%/g, "%%");
}

/** A value in an environment file read by both systemd and `docker --env-file`, which has no quoting. */
export function envFileValue(value: string): string {
    if (!ENV_FILE_VALUE.test(value)) throw new Error("an environment-file value may hold only letters, digits and _@%+=:,./?&~!*()[]-");
    return value;
}

/** A whole number, as written in any file. */
export function integer(value: unknown): string {
    if (typeof value !== "number" || !Number.isSafeInteger(value)) throw new Error(`expected a whole number, got ${typeof value}`);
    return String(value);
}

/** Content embedded in a quoted here-document: it must not hold the line that ends it. */
export function heredocBody(value: string, delimiter: string): string {
    if (value.split("\n").includes(delimiter)) throw new Error(`embedded content holds its here-document's end line ${delimiter}`);
    return value;
}

const hb = Handlebars.create();

// Strict mode covers plain {{name}} lookups but not helper arguments, so every helper
// checks its argument too: a missing value is an error wherever it appears.
type HelperOptions = Handlebars.HelperOptions & { name?: string; loc?: { start: { line: number } } };
function present(v: unknown, options: HelperOptions): void {
    if (v === undefined || v === null) {
        throw new Error(`template value for {{${options.name ?? "helper"}}} at line ${options.loc?.start.line ?? "?"} is missing`);
    }
}
function valueHelper(fn: (v: unknown, ...rest: unknown[]) => string) {
    return function (this: unknown, v: unknown, ...rest: unknown[]) {
        present(v, rest[rest.length - 1] as HelperOptions);
        return fn(v, ...rest.slice(0, -1));
    };
}
hb.registerHelper(
    "sh",
    valueHelper((v) => shellWord(String(v))),
);
hb.registerHelper(
    "toml",
    valueHelper((v) => tomlString(String(v))),
);
hb.registerHelper(
    "tomlArray",
    valueHelper((v) => `[${(v as unknown[]).map((x) => tomlString(String(x))).join(", ")}]`),
);
hb.registerHelper(
    "unitarg",
    valueHelper((v) => unitWord(String(v))),
);
hb.registerHelper(
    "nftstr",
    valueHelper((v) => nftString(String(v))),
);
hb.registerHelper(
    "join",
    valueHelper((v, sep) => (v as unknown[]).map(String).join(typeof sep === "string" ? sep : ", ")),
);
hb.registerHelper(
    "comment",
    valueHelper((v) => commentText(String(v))),
);
hb.registerHelper(
    "dq",
    valueHelper((v) => doubleQuoted(String(v))),
);
hb.registerHelper(
    "unitval",
    valueHelper((v) => unitValue(String(v))),
);
hb.registerHelper(
    "envval",
    valueHelper((v) => envFileValue(String(v))),
);
hb.registerHelper(
    "int",
    valueHelper((v) => integer(v)),
);
hb.registerHelper(
    "heredoc",
    valueHelper((v, delimiter) => heredocBody(String(v), String(delimiter))),
);

/**
 * The helpers that put a value into a file, each for its context. The template lint
 * (test/unit/templates.test.ts) fails on any interpolation that is not a call of one of these.
 */
export const QUOTING_HELPERS = [
    "sh",
    "toml",
    "tomlArray",
    "unitarg",
    "nftstr",
    "comment",
    "dq",
    "unitval",
    "envval",
    "int",
    "heredoc",
] as const;
for (const block of ["if", "unless", "each", "with"]) {
    const builtin = hb.helpers[block];
    hb.registerHelper(block, function (this: unknown, v: unknown, options: HelperOptions) {
        present(v, options);
        return builtin.call(this, v, options);
    });
}

/**
 * templates/ holds a folder per room: a role's (storage, sequencer, validator), a layer's (hosts,
 * health, monitoring, rollout) and shared/ for the pieces several use, so a path tells whose file
 * it is (docs/development.md, Layers). A template is named without its folder: each name once.
 */
export function templateFiles(): ReadonlyMap<string, string> {
    const files = new Map<string, string>();
    for (const room of fs.readdirSync(TEMPLATES_DIR, { withFileTypes: true })) {
        if (!room.isDirectory()) throw new Error(`templates/${room.name}: a template sits in the folder of its room`);
        for (const file of fs.readdirSync(path.join(TEMPLATES_DIR, room.name))) {
            const name = file.replace(/\.hbs$/, "");
            if (name === file) throw new Error(`templates/${room.name}/${file}: not a template (*.hbs)`);
            if (files.has(name)) throw new Error(`templates/${room.name}/${file}: ${files.get(name)} has its name`);
            files.set(name, `${room.name}/${file}`);
        }
    }
    return files;
}
const TEMPLATE_FILES = templateFiles();

// Partials: templates/<room>/_<name>.hbs is {{> name}} in every template (shared script pieces).
for (const [name, file] of TEMPLATE_FILES) {
    if (name.startsWith("_")) hb.registerPartial(name.slice(1), fs.readFileSync(path.join(TEMPLATES_DIR, file), "utf8"));
}

const compiled = new Map<string, Handlebars.TemplateDelegate>();

/** Render templates/<room>/<name>.hbs with `context`; throws on any variable the context lacks. */
export function render(name: string, context: object): string {
    let template = compiled.get(name);
    if (!template) {
        const file = TEMPLATE_FILES.get(name);
        if (file === undefined || name.startsWith("_")) throw new Error(`no template ${name} under templates/`);
        const source = fs.readFileSync(path.join(TEMPLATES_DIR, file), "utf8");
        template = hb.compile(source, { strict: true, noEscape: true });
        compiled.set(name, template);
    }
    return template(context);
}

/** Content hash used as a step trigger: the step re-runs exactly when this changes. */
export function contentHash(...parts: string[]): string {
    const h = crypto.createHash("sha256");
    for (const p of parts) h.update(p).update("\0");
    return h.digest("hex").slice(0, 16);
}
