// The local files a fleet config names: SSH key files and SHA256SUMS files, read on the machine that
// runs Pulumi; a key file's content is never quoted.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import type { FleetSpec } from "./schema";
import type { ResolvedRelease } from "./plan";
import * as v from "../values/validators";
import { contractOf } from "../roles/registry";

/** A local file named in config (key file, SHA256SUMS): `~/` is $HOME, a relative path is relative to `base`. */
export function localPath(file: string, base: string = process.cwd()): string {
    if (file === "~" || file.startsWith("~/")) return path.join(os.homedir(), file.slice(1));
    return path.resolve(base, file);
}

/** Reads an SSH key file, or says why it cannot be used (never quoting its content). */
export function readKeyFile(file: string): { key: string } | { reason: string } {
    const p = localPath(file);
    let st: fs.Stats;
    try {
        st = fs.statSync(p);
    } catch {
        return { reason: `${p}: no such file` };
    }
    if (!st.isFile()) return { reason: `${p}: not a regular file` };
    // ssh itself refuses a key others can read; so do we.
    if ((st.mode & 0o077) !== 0)
        return { reason: `${p}: readable by group or others (mode ${(st.mode & 0o777).toString(8)}); chmod 600 it` };
    let key: string;
    try {
        key = fs.readFileSync(p, "utf8");
    } catch (e) {
        return { reason: `${p}: cannot be read (${(e as NodeJS.ErrnoException).code ?? "error"})` };
    }
    const reason = v.sshPrivateKeyReason(key);
    return reason ? { reason: `${p}: ${reason}` } : { key };
}

export function checkSshKeys(spec: FleetSpec, issues: string[]): void {
    for (const [name, host] of Object.entries(spec.hosts)) {
        const file = host.kind === "existing" ? host.sshPrivateKeyFile : undefined;
        if (host.sshPrivateKeySecret === undefined && file === undefined) {
            issues.push(`hosts.${name}: needs sshPrivateKeySecret${host.kind === "existing" ? " or sshPrivateKeyFile" : ""}`);
        } else if (host.sshPrivateKeySecret !== undefined && file !== undefined) {
            issues.push(`hosts.${name}: give sshPrivateKeySecret or sshPrivateKeyFile, not both`);
        } else if (file !== undefined) {
            const read = readKeyFile(file);
            if ("reason" in read) issues.push(`hosts.${name}.sshPrivateKeyFile: ${read.reason}`);
        }
    }
}

/** The checksum of the file `fileName` in a SHA256SUMS-format text ("<hex>  <name>" lines). */
export function sha256FromSums(sums: string, fileName: string): string | undefined {
    for (const line of sums.split("\n")) {
        const m = /^([0-9a-fA-F]{64}) [ *]?(.+)$/.exec(line.trim());
        if (m && path.basename(m[2]!) === fileName) return m[1]!.toLowerCase();
    }
    return undefined;
}

/**
 * Each release with its sha256: inline, or looked up in its SHA256SUMS file by the URL's file name.
 * `secretUrl` gives the value of a URL held in a secret (undefined where it cannot be read: not
 * decrypted, not set, not a URL; checkSecrets says the last two). A secret URL's file name is never
 * put in a message: its path may be the credential too.
 */
export function resolveReleases(
    spec: FleetSpec,
    issues: string[],
    warnings: string[],
    filesRequired = true,
    secretUrl: (key: string) => string | undefined = () => undefined,
): Map<string, ResolvedRelease> {
    const out = new Map<string, ResolvedRelease>();
    for (const [name, r] of Object.entries(spec.releases)) {
        const at = `releases.${name}`;
        if ((r.sha256 === undefined) === (r.sha256File === undefined)) {
            issues.push(`${at}: give exactly one of sha256 or sha256File; a release is never installed unchecked`);
            continue;
        }
        if ((r.url === undefined) === (r.file === undefined)) {
            issues.push(`${at}: give exactly one of url or file (a file under the stack's releaseMirror)`);
            continue;
        }
        if (r.file !== undefined && spec.releaseMirror === undefined) {
            issues.push(`${at}.file: the stack names no releaseMirror to fetch ${r.file} from`);
            continue;
        }
        const given = r.url ?? `${spec.releaseMirror}${r.file}`;
        let sha = r.sha256;
        if (r.sha256File !== undefined) {
            const file = localPath(r.sha256File);
            const url = typeof given === "string" ? given : secretUrl(given.secret);
            if (url === undefined) {
                if (!filesRequired)
                    warnings.push(
                        `${at}.sha256File: the release's URL is a secret not decrypted here, so its file's line is not looked up (only pulumi up needs it)`,
                    );
                continue;
            }
            const fileName = path.basename(new URL(url).pathname);
            let sums: string;
            try {
                sums = fs.readFileSync(file, "utf8");
            } catch {
                if (filesRequired) issues.push(`${at}.sha256File: ${file}: cannot be read`);
                else warnings.push(`${at}.sha256File: ${file}: cannot be read on this machine (only pulumi up needs it)`);
                continue;
            }
            sha = sha256FromSums(sums, fileName);
            if (sha === undefined) {
                issues.push(
                    `${at}.sha256File: ${file} has no entry for ${typeof given === "string" ? fileName : "the file name of the URL the secret holds"}`,
                );
                continue;
            }
        }
        out.set(name, { name, url: given, sha256: sha! });
    }
    checkReleaseUses(spec, issues, warnings);
    return out;
}

/** Every release a node names is configured, and every configured release is used. */
function checkReleaseUses(spec: FleetSpec, issues: string[], warnings: string[]): void {
    const used = new Set<string>();
    const known = Object.keys(spec.releases).join(", ") || "none";
    spec.nodes.forEach((node, i) => {
        const upgrade = contractOf(node).upgrade?.(node);
        if (upgrade !== undefined) used.add(upgrade.release);
        if (upgrade !== undefined && !Object.hasOwn(spec.releases, upgrade.release))
            issues.push(`nodes[${i}].${upgrade.field}.release: no release named "${upgrade.release}" under releases (known: ${known})`);
        if (node.release === undefined) return;
        used.add(node.release);
        if (!Object.hasOwn(spec.releases, node.release))
            issues.push(`nodes[${i}].release: no release named "${node.release}" under releases (known: ${known})`);
    });
    for (const name of Object.keys(spec.releases)) if (!used.has(name)) warnings.push(`releases.${name}: no node uses this release`);
}
