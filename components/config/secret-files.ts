// Secrets kept as files on the machine that runs Pulumi (the fleet's `secretsDir`), beside those of
// the stack config: a thousand node keys do not fit in the one environment variable Pulumi hands the
// config in (docs/configuration.md, "A fleet in a file"). A file named after the secret holds its
// value; as ssh does with a key file, one others could read is refused, and so is a directory
// inside the project (secrets never go into the repository).
import * as fs from "node:fs";
import * as path from "node:path";
import { localPath } from "./files";
import type { SecretSource } from "./secrets";

/** Secret names are config key names (primitives.ts secretRef): safe as file names. */
const SECRET_NAME = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/;

type FileRead = { readonly value: string } | { readonly reason: string } | undefined;

/** Why `dir` cannot hold the fleet's secrets, or undefined. `full` is its resolved path. */
export function secretsDirReason(full: string, projectDir: string): string | undefined {
    // Compared as real paths: a link outside the project to a directory inside it is inside it.
    const real = (p: string) => {
        try {
            return fs.realpathSync(p);
        } catch {
            return path.resolve(p);
        }
    };
    const rel = path.relative(real(projectDir), real(full));
    if (rel === "" || (!rel.startsWith("..") && !path.isAbsolute(rel)))
        return `${full}: inside the project; secrets never go into the repository: keep them outside it (e.g. ~/.nodefleet/<stack>)`;
    let st: fs.Stats;
    try {
        st = fs.statSync(full);
    } catch {
        return `${full}: no such directory on this machine`;
    }
    if (!st.isDirectory()) return `${full}: not a directory`;
    if ((st.mode & 0o077) !== 0) return `${full}: open to group or others (mode ${(st.mode & 0o777).toString(8)}); chmod 700 it`;
    return undefined;
}

/** A secret's file: its value (one trailing newline dropped), why it cannot be used, or undefined when there is none. */
function readSecretFile(full: string): FileRead {
    let st: fs.Stats;
    try {
        st = fs.statSync(full);
    } catch {
        return undefined;
    }
    if (!st.isFile()) return { reason: `${full}: not a regular file` };
    if ((st.mode & 0o077) !== 0)
        return { reason: `${full}: readable by group or others (mode ${(st.mode & 0o777).toString(8)}); chmod 600 it` };
    try {
        return { value: fs.readFileSync(full, "utf8").replace(/\r?\n$/, "") };
    } catch (e) {
        return { reason: `${full}: cannot be read (${(e as NodeJS.ErrnoException).code ?? "error"})` };
    }
}

/**
 * `base` (the stack config) and the files of `dir`: a name is either a config key or a file, never
 * both (two values for one key is how a validator key ends up on two machines). Each file is read
 * once. With `dir` undefined this is `base`. `presenceOnly` (status, on a machine that may not hold
 * the node keys): when `dir` does not exist here, a name not in the config counts as set, unread.
 */
export function withSecretsDir(base: SecretSource, dir: string | undefined, projectDir: string, presenceOnly = false): SecretSource {
    if (dir === undefined) return base;
    const full = localPath(dir, projectDir);
    const dirReason = secretsDirReason(full, projectDir);
    if (presenceOnly && !fs.existsSync(full) && dirReason !== undefined && !dirReason.includes("inside the project")) {
        return { ...base, get: (key) => base.get(key) ?? "", isSecret: (key) => base.get(key) === undefined || base.isSecret(key) };
    }
    const files = new Map<string, FileRead>();
    const file = (key: string): FileRead => {
        if (dirReason !== undefined || !SECRET_NAME.test(key)) return undefined;
        if (!files.has(key)) files.set(key, readSecretFile(path.join(full, key)));
        return files.get(key);
    };
    const inFile = (key: string) => {
        const f = file(key);
        return f !== undefined && "value" in f ? f.value : undefined;
    };
    return {
        get: (key) => base.get(key) ?? inFile(key),
        isSecret: (key) => (base.get(key) !== undefined ? base.isSecret(key) : inFile(key) !== undefined),
        secretNames: () => {
            let listed: string[] = [];
            try {
                listed = dirReason === undefined ? fs.readdirSync(full).filter((n) => SECRET_NAME.test(n)) : [];
            } catch {
                listed = [];
            }
            return [...new Set([...(base.secretNames?.() ?? []), ...listed])];
        },
        problem: (key) => {
            const f = file(key);
            if (base.get(key) !== undefined && f !== undefined)
                return `the secret it names is both a config key of the stack and a file of secretsDir (${full}): keep one, so that one value is used everywhere`;
            if (f !== undefined && "reason" in f) return `the secret it names: ${f.reason}`;
            if (base.get(key) === undefined && dirReason !== undefined)
                return `the secret it names is not a config key of the stack, and secretsDir cannot be read: ${dirReason}`;
            return base.problem?.(key);
        },
        missingHint: `neither a config key of the stack (pulumi config set --secret <that name> …) nor a file of that name in secretsDir (${full})`,
    };
}
