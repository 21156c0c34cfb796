// The host tools (hostfiles/: the Python and JavaScript programs the roles' steps install under
// HOST_LIB) reach a host once, as files, instead of inside every step script that installs them.
// A step's script is kept in Pulumi's state twice (inputs and outputs) and the state is written
// whole after every step, so a validator's configure step carrying its 130 KB of tools made most of
// the state and most of an `up`'s cost (scripts/bench.sh engine). Now:
//   - each host has one CopyToRemote step (NAME-tools) that copies the tools its nodes use, each in
//     a file named by its sha256, into HOST_TOOLS_DIR under the SSH user's home; the state keeps
//     only the bundle's path and hash;
//   - a script installs a tool with `put_tool PATH MODE OWNER DIGEST` (templates/shared/_put.sh.hbs): it
//     takes the file of that digest, checks the digest, and puts it in place as `put` does;
//   - the bundle is written on this machine under LOCAL_TOOLS_DIR/<digest of the bundle>/, made
//     anew by every run (preview included) from hostfiles/.
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import * as pulumi from "@pulumi/pulumi";
import * as command from "@pulumi/command";
import { hostFile, HOSTFILES_DIR } from "../base/render";
import type { Connection } from "./connection";
import { secretAssignments, type SecretScript } from "./scripts";
import { DIAGNOSIS_TOOLS, type ToolEntry } from "../roles/contract";
import { roleContract, type Role } from "../roles/registry";

/** Where the tools are copied on a host: relative to the SSH user's home (SFTP starts there). */
export const HOST_TOOLS_DIR = ".nodefleet/tools";

/** Where the bundles are written on this machine, relative to the project (the program's working directory). */
export const LOCAL_TOOLS_DIR = ".nodefleet/tools";

/** One host tool: the hostfiles/ file, where it is installed (under HOST_LIB) and its mode. */
export interface HostTool {
    /** Its name in hostfiles/ ("zgs-health.py", "zgvalidator/node.py"). */
    readonly name: string;
    /** Its path under HOST_LIB. */
    readonly path: string;
    readonly mode: "0644" | "0755";
    /** The sha256 of its content (hex): the file's name in the bundle. */
    readonly digest: string;
}

/** A hostfiles/ file as a host tool, installed under HOST_LIB at the same relative path. */
export function hostTool(name: string, mode: HostTool["mode"]): HostTool {
    return { name, path: name, mode, digest: crypto.createHash("sha256").update(hostFile(name)).digest("hex") };
}

const ROLE_TOOLS = new Map<string, readonly HostTool[]>();

/** The tools a role's steps install and run (its contract's list, in bundle order). */
export function roleTools(role: Role): readonly HostTool[] {
    let tools = ROLE_TOOLS.get(role);
    if (tools === undefined) {
        tools = roleContract(role)!.tools.flatMap(toolsOf);
        ROLE_TOOLS.set(role, tools);
    }
    return tools;
}

/** A tool entry as host tools: a file, or every module and data file of a package (sorted). */
function toolsOf(entry: ToolEntry): HostTool[] {
    if ("file" in entry) return [hostTool(entry.file, entry.mode)];
    return fs
        .readdirSync(path.join(HOSTFILES_DIR, entry.packageDir))
        .filter((f) => f.endsWith(".py") || f.endsWith(".json"))
        .sort()
        .map((f) => hostTool(`${entry.packageDir}/${f}`, "0644"));
}

/** The tools the health timer runs: the checks' runner, the one diagnosis table, its metrics half, and the switch's step list it reads. */
export function monitoringTools(): readonly HostTool[] {
    return [
        hostTool("nodefleet_checks.py", "0644"),
        ...DIAGNOSIS_TOOLS.flatMap(toolsOf),
        hostTool("nodefleet_metrics.py", "0644"),
        hostTool("zgvalidator/steps.json", "0644"),
    ];
}

/**
 * The tools a rollout gate puts on its host: the gate, the diagnosis table it reads answers with,
 * nodefleet_rpc (its URL cut for the journal lines of a crash loop) and nodefleet_units (the
 * restart counts that make one).
 */
export function gateTools(): readonly HostTool[] {
    return [
        hostTool("nodefleet_gate.py", "0644"),
        hostTool("nodefleet_rpc.py", "0644"),
        hostTool("nodefleet_units.py", "0644"),
        ...monitoringTools(),
    ];
}

/** The sha256 (hex) of a bundled script: its file's name in the bundle and on the host. */
export function scriptDigest(script: string): string {
    return crypto.createHash("sha256").update(script).digest("hex");
}

/** A script of a host's bundle with its digest (scriptDigest), taken once. */
export interface BundledScript {
    readonly digest: string;
    readonly text: string;
}

/**
 * Writes the bundle of these tools and scripts (each file named by its digest) unless it is there
 * already, and returns its directory relative to the project, with a trailing slash (CopyToRemote
 * copies the directory's files, not the directory). The directory is named by the digest of its
 * contents, so a bundle once written never changes; it is written beside and renamed into place whole.
 */
export function writeToolBundle(tools: readonly HostTool[], scripts: readonly BundledScript[] = []): string {
    const files = new Map<string, () => string>();
    for (const t of tools) files.set(t.digest, () => hostFile(t.name));
    for (const s of scripts) files.set(s.digest, () => s.text);
    const digests = [...files.keys()].sort();
    const name = crypto.createHash("sha256").update(digests.join("\n")).digest("hex").slice(0, 32);
    const dir = path.join(LOCAL_TOOLS_DIR, name);
    if (!fs.existsSync(dir)) {
        fs.mkdirSync(LOCAL_TOOLS_DIR, { recursive: true });
        const tmp = fs.mkdtempSync(path.join(LOCAL_TOOLS_DIR, `.${name}-`));
        for (const [digest, content] of files) fs.writeFileSync(path.join(tmp, digest), content());
        try {
            fs.renameSync(tmp, dir);
        } catch (e) {
            // Another run (a preview beside an up) wrote the same bundle first: it is the same.
            fs.rmSync(tmp, { recursive: true, force: true });
            if (!fs.existsSync(dir)) throw e;
        }
    }
    return `${dir}/`;
}

/**
 * What a bundled step sends on stdin in place of its script: find the script in the host's bundle
 * by its digest, check the digest, run it with sh. `label` names the step in its first line (the
 * line the step's log and the cli tier's scripted host show).
 */
export function bundleRunner(label: string, digest: string, secrets?: SecretScript["secrets"]): string {
    if (!/^[0-9a-f]{64}$/.test(digest)) throw new Error(`unreachable: a script digest is 64 hex digits, not ${digest}`);
    // Kept short: every bundled step stores it. A missing file fails the check as an altered one.
    // With secrets: they are set, then the script runs in this shell (sourced), which reads them.
    return [
        `# nodefleet: ${label.replace(/[^A-Za-z0-9 ._:/-]/g, "?")}`,
        "set -eu",
        `nodefleet_run=${digest}`,
        `f="$(getent passwd "\${SUDO_USER:-root}"|cut -d: -f6)/${HOST_TOOLS_DIR}/$nodefleet_run"`,
        `[ "$(sha256sum <"$f"|cut -c1-64)" = "$nodefleet_run" ] || { echo "nodefleet: $f is missing or altered on this host (pulumi up --replace the host's -tools step)" >&2; exit 1; }`,
        ...(secrets === undefined ? [`exec /bin/sh "$f"`] : [`${secretAssignments(secrets)}. "$f"`]),
        "",
    ].join("\n");
}

/** The digest a bundled step's runner names (bundleRunner), or undefined for a script sent whole. */
export function runnerDigest(stdin: string): string | undefined {
    return /^nodefleet_run=([0-9a-f]{64})$/m.exec(stdin)?.[1];
}

/**
 * A reader of the scripts the bundles under `project`/LOCAL_TOOLS_DIR hold, by digest (any bundle: a
 * file is named by its content's sha256, checked when read), undefined for one none holds. The
 * bundles' files are listed once, and again when a digest is not among them (a bundle written
 * since): a fleet has a bundle per host and scripts per host, and trying each bundle in turn for
 * each script grew with the square of the fleet.
 */
export function bundledScriptReader(project: string): (digest: string) => string | undefined {
    const root = path.join(project, LOCAL_TOOLS_DIR);
    let where: Map<string, string[]> | undefined; // digest -> the files of that name, one per bundle holding it
    const list = (): Map<string, string[]> => {
        const found = new Map<string, string[]>();
        let bundles: string[];
        try {
            bundles = fs.readdirSync(root).filter((n) => !n.startsWith("."));
        } catch {
            return found;
        }
        for (const b of bundles) {
            let files: string[];
            try {
                files = fs.readdirSync(path.join(root, b));
            } catch {
                continue;
            }
            for (const f of files) {
                const paths = found.get(f);
                if (paths) paths.push(path.join(root, b, f));
                else found.set(f, [path.join(root, b, f)]);
            }
        }
        return found;
    };
    return (digest) => {
        if (!where?.has(digest)) where = list();
        for (const file of where.get(digest) ?? []) {
            let text: string;
            try {
                text = fs.readFileSync(file, "utf8");
            } catch {
                continue;
            }
            if (scriptDigest(text) === digest) return text;
        }
        return undefined;
    };
}

/**
 * The name of a secret a bundled body holds (any of its lines of 8 characters or more), if one: the
 * secrets go on stdin only, the body is a plain file here and on the host.
 */
export function secretInBody(body: string, secrets: SecretScript["secrets"]): string | undefined {
    return Object.entries(secrets).find(([, content]) =>
        content.split("\n").some((line) => line.trim().length >= 8 && body.includes(line)),
    )?.[0];
}

export interface HostToolsArgs {
    readonly connection: pulumi.Input<Connection>;
    /** The tools of every node on the host (duplicates are fine). */
    readonly tools: readonly HostTool[];
    /** What identifies the machine behind the connection: a new one gets the tools again. */
    readonly machine: pulumi.Input<string>;
    /**
     * What the copy runs after: nothing on an existing host, where it is the first step (the
     * preflight, the bootstrap and the firewall run from the bundle too); a cloud host's data volume.
     */
    readonly after: readonly pulumi.Resource[];
}

/**
 * A host's bundle: the tools its nodes install and the large scripts its steps run, copied to the
 * host by one CopyToRemote step (NAME-tools), the host's first step: its preflight, bootstrap and
 * firewall run from it too. A bundled step's state keeps
 * the short runner (bundleRunner) instead of its script; the script's digest still decides when the
 * step runs again (its triggers), exactly as the inline script did. Built in two phases: the steps
 * add their scripts (`run`), then the fleet seals the bundle once the host's nodes are built, which
 * makes the copy step; the steps depend on it through `step`.
 */
export class HostBundle {
    private readonly scripts: pulumi.Output<BundledScript>[] = [];
    private readonly copied: Promise<pulumi.Resource>;
    private resolveCopied!: (r: pulumi.Resource) => void;
    private sealed = false;
    /** The steps that run after the copy (remoteStep): a step depending on one needs no direct edge. */
    private readonly followers = new WeakSet<object>();

    constructor(
        private readonly name: string,
        private readonly args: HostToolsArgs,
        private readonly opts: pulumi.CustomResourceOptions,
    ) {
        this.copied = new Promise((resolve) => (this.resolveCopied = resolve));
    }

    /** Whether `r` is a step that runs after the copy. */
    follows(r: unknown): boolean {
        return typeof r === "object" && r !== null && this.followers.has(r);
    }

    /** Marks a step that runs after the copy (it depends on it, directly or through a follower). */
    follow(step: pulumi.Resource): void {
        this.followers.add(step);
    }

    /** The copy step, once sealed. */
    get step(): Promise<pulumi.Resource> {
        return this.copied;
    }

    /**
     * Puts a script in the bundle; returns what the step sends on stdin instead. Only for scripts that
     * carry no secret (the bundle is a plain file here and on the host) and that depend on nothing
     * but this host's own resources (the copy waits for every input of every script it holds).
     */
    run(label: string, script: pulumi.Input<string>, secrets?: pulumi.Output<SecretScript["secrets"]>): pulumi.Output<string> {
        if (this.sealed) throw new Error(`unreachable: ${label}: the bundle of ${this.name} is sealed`);
        const text = pulumi.output(script);
        const bundled = pulumi.all([text, pulumi.isSecret(text)]).apply(([s, secret]): BundledScript => {
            if (secret) throw new pulumi.RunError(`${label}: a script that carries a secret cannot go into the host bundle`);
            return { digest: scriptDigest(s), text: s };
        });
        this.scripts.push(bundled);
        if (secrets === undefined) return bundled.apply((b) => bundleRunner(label, b.digest));
        return pulumi.secret(
            pulumi.all([bundled, secrets]).apply(([b, s]) => {
                const held = secretInBody(b.text, s);
                if (held !== undefined) throw new pulumi.RunError(`${label}: its bundled script holds the secret ${held}`);
                return bundleRunner(label, b.digest, s);
            }),
        );
    }

    /** Makes the copy step: call once, after every step of the host has added its script. */
    seal(): void {
        if (this.sealed) return;
        this.sealed = true;
        // The host's own steps (the bootstrap at least) always run from the bundle.
        if (this.scripts.length === 0) throw new Error(`unreachable: the bundle of ${this.name} holds no script`);
        const tools = this.args.tools;
        const source = pulumi.all(this.scripts).apply((scripts) => new pulumi.asset.FileArchive(writeToolBundle(tools, scripts)));
        this.resolveCopied(
            new command.remote.CopyToRemote(
                this.name,
                { connection: this.args.connection, source, remotePath: HOST_TOOLS_DIR, triggers: [this.args.machine] },
                { ...this.opts, dependsOn: [...this.args.after] },
            ),
        );
    }
}
