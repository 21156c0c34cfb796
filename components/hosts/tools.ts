// The host tools (hostfiles/: the Python and JavaScript programs the roles' steps install under
// HOST_LIB) reach a host once, as files, instead of inside every step script that installs them.
// A step's script is kept in Pulumi's state twice (inputs and outputs) and the state is written
// whole after every step, so a validator's configure step carrying its 130 KB of tools made most of
// the state and most of an `up`'s cost (scripts/bench.sh engine). Now:
//   - each host has one CopyToRemote step (NAME-tools) that copies the tools its nodes use, each in
//     a file named by its sha256, into HOST_TOOLS_DIR under the SSH user's home; the state keeps
//     only the bundle's path and hash;
//   - a script installs a tool with `put_tool PATH MODE OWNER DIGEST` (templates/_put.sh.hbs): it
//     takes the file of that digest, checks the digest, and puts it in place as `put` does;
//   - the bundle is written on this machine under LOCAL_TOOLS_DIR/<digest of the bundle>/, made
//     anew by every run (preview included) from hostfiles/.
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import * as pulumi from "@pulumi/pulumi";
import * as command from "@pulumi/command";
import { hostFile, HOSTFILES_DIR } from "../render";
import type { Connection } from "./host";

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

export type ToolRole = "storage" | "sequencer" | "validator";

const ROLE_TOOLS = new Map<ToolRole, readonly HostTool[]>();

/**
 * The tools a role's steps install and run. The validator's: the entry point zg-validator.py, its
 * package (every module and data file of hostfiles/zgvalidator) and the scripts it shares with the
 * other roles or runs as commands.
 */
export function roleTools(role: ToolRole): readonly HostTool[] {
    let tools = ROLE_TOOLS.get(role);
    if (tools === undefined) {
        switch (role) {
            case "storage":
                tools = [hostTool("nodefleet_rpc.py", "0644"), hostTool("zgs-endpoint.py", "0755"), hostTool("zgs-health.py", "0755")];
                break;
            case "sequencer":
                tools = [hostTool("nodefleet_rpc.py", "0644"), hostTool("aztec-register.py", "0755"), hostTool("aztec-argv.mjs", "0644"), hostTool("aztec-health.py", "0755")];
                break;
            case "validator": {
                const scripts = ["nodefleet_rpc.py", "trim_export.py", "set-rpc-dial-url.py", "consensus-height-rollback.py", "zg-validator.py"];
                const modules = fs
                    .readdirSync(path.join(HOSTFILES_DIR, "zgvalidator"))
                    .filter((f) => f.endsWith(".py") || f.endsWith(".json"))
                    .sort()
                    .map((f) => `zgvalidator/${f}`);
                tools = [...scripts.map((f) => hostTool(f, f === "nodefleet_rpc.py" ? "0644" : "0755")), ...modules.map((f) => hostTool(f, "0644"))];
                break;
            }
        }
        ROLE_TOOLS.set(role, tools);
    }
    return tools;
}

/**
 * Writes the bundle of these tools (each file named by its digest) unless it is there already, and
 * returns its directory relative to the project, with a trailing slash (CopyToRemote copies the
 * directory's files, not the directory). The directory is named by the digest of its contents,
 * so a bundle once written never changes; it is written beside and renamed into place whole.
 */
export function writeToolBundle(tools: readonly HostTool[]): string {
    const digests = [...new Set(tools.map((t) => t.digest))].sort();
    const name = crypto.createHash("sha256").update(digests.join("\n")).digest("hex").slice(0, 32);
    const dir = path.join(LOCAL_TOOLS_DIR, name);
    if (!fs.existsSync(dir)) {
        fs.mkdirSync(LOCAL_TOOLS_DIR, { recursive: true });
        const tmp = fs.mkdtempSync(path.join(LOCAL_TOOLS_DIR, `.${name}-`));
        for (const t of tools) fs.writeFileSync(path.join(tmp, t.digest), hostFile(t.name));
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

export interface HostToolsArgs {
    readonly connection: pulumi.Input<Connection>;
    /** The tools of every node on the host (duplicates are fine). */
    readonly tools: readonly HostTool[];
    /** What identifies the machine behind the connection: a new one gets the tools again. */
    readonly machine: pulumi.Input<string>;
}

/** The step that copies a host's tools to it: the role steps that install them depend on it. */
export function hostToolsStep(name: string, args: HostToolsArgs, opts: pulumi.CustomResourceOptions): command.remote.CopyToRemote {
    return new command.remote.CopyToRemote(
        name,
        {
            connection: args.connection,
            source: new pulumi.asset.FileArchive(writeToolBundle(args.tools)),
            remotePath: HOST_TOOLS_DIR,
            triggers: [args.machine],
        },
        opts,
    );
}
