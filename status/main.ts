// `nodefleet status`: the whole fleet's health now. Reads the stack's config and outputs through the
// Pulumi Automation API (no `up`, nothing changed), runs each node's read-only health check over
// SSH on every host at once, prints one table (or JSON) on stdout; progress and errors go to stderr.
//
//   nodefleet status [--stack S]... [--shards] [--json] [--watch SECONDS [--count N]] [--timeout SECONDS] [--parallel N]
//
// Several stacks (--stack given more than once, or --shards: every shard of the stack's fleet) are
// read and checked at once: one table per stack, or one JSON document {at, healthy, stacks: [...]}.
//
// Exit status: 0 every node healthy, 1 a node unhealthy or a host unreachable, 2 bad usage or a
// stack that cannot be read.
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { LocalWorkspace } from "@pulumi/pulumi/automation";
import { probeAll, removeKeyDirs } from "./probe";
import { report, table, type StatusReport } from "./report";
import { planFromConfig, StatusInputError, targets, type ConfigValue, type HostTarget } from "./targets";
import { checkMain } from "./check";

export interface StatusArgs {
    /** The stacks named with --stack, in order (none: the selected one). */
    readonly stacks: readonly string[];
    /** Every shard of the (first) stack's fleet (`fleet.shards`) besides it. */
    readonly shards: boolean;
    readonly json: boolean;
    readonly watch: number | undefined;
    readonly count: number | undefined;
    readonly timeout: number;
    readonly parallel: number;
}

export const USAGE = `usage: nodefleet status [--stack S]... [--shards] [--json] [--watch SECONDS [--count N]] [--timeout SECONDS] [--parallel N]

  --stack S          the stack (default: the selected one); more than once: each of them
  --shards           every shard of the stack's fleet (its fleet.shards), all at once
  --json             the same data as JSON (one document per round) for monitoring; for several
                     stacks {at, healthy, stacks: [one report per stack]}
  --watch SECONDS    check again every SECONDS until interrupted (or --count rounds)
  --timeout SECONDS  per host, SSH included (default 30); a host that does not answer is unreachable
  --parallel N       hosts checked at once (default 64)
exit status: 0 all healthy, 1 a node unhealthy or unreachable, 2 usage or stack error`;

export class UsageError extends Error {}

function positive(flag: string, value: string | undefined, integer: boolean): number {
    const n = Number(value);
    if (value === undefined || !Number.isFinite(n) || n <= 0 || (integer && !Number.isInteger(n)))
        throw new UsageError(
            `${flag}: needs a positive ${integer ? "whole " : ""}number, got ${value === undefined ? "nothing" : JSON.stringify(value)}`,
        );
    return n;
}

export function parseArgs(argv: readonly string[]): StatusArgs {
    const stacks: string[] = [];
    let shards = false;
    let json = false;
    let watch: number | undefined;
    let count: number | undefined;
    let timeout = 30;
    let parallel = 64;
    for (let i = 0; i < argv.length; i++) {
        const a = argv[i]!;
        const [flag, inline] =
            a.startsWith("--") && a.includes("=") ? [a.slice(0, a.indexOf("=")), a.slice(a.indexOf("=") + 1)] : [a, undefined];
        const value = () => (inline !== undefined ? inline : argv[++i]);
        switch (flag) {
            case "--stack": {
                const s = value();
                if (s === undefined || !/^[A-Za-z0-9_.\-/]+$/.test(s))
                    throw new UsageError(
                        `--stack: needs a stack name (letters, digits, - _ . /), got ${s === undefined ? "nothing" : JSON.stringify(s)}`,
                    );
                if (!stacks.includes(s)) stacks.push(s);
                break;
            }
            case "--shards":
                shards = true;
                break;
            case "--json":
                json = true;
                break;
            case "--watch":
                watch = positive("--watch", value(), false);
                break;
            case "--count":
                count = positive("--count", value(), true);
                break;
            case "--timeout":
                timeout = positive("--timeout", value(), false);
                break;
            case "--parallel":
                parallel = positive("--parallel", value(), true);
                break;
            default:
                throw new UsageError(`unknown argument ${JSON.stringify(a)}`);
        }
    }
    if (count !== undefined && watch === undefined) throw new UsageError("--count: only with --watch");
    return { stacks, shards, json, watch, count, timeout, parallel };
}

/** Strips control characters (a host's answer must not drive the operator's terminal). */
export function printable(text: string): string {
    // eslint-disable-next-line no-control-regex
    return text.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, "?");
}

interface Stack {
    readonly name: string;
    /** The stacks of its fleet (`fleet.shards`), itself among them; empty when it is not split. */
    readonly shards: readonly string[];
    readonly targets: readonly HostTarget[];
    /** The SSH private keys held in secret config, by full config key. */
    readonly secrets: Record<string, ConfigValue>;
    /** A secret of the fleet's secretsDir (docs/configuration.md, "A fleet in a file"), read where the config has no such key. */
    readonly fileSecret: (key: string) => string | undefined;
}

async function readStack(workDir: string, wanted: string | undefined): Promise<Stack> {
    const ws = await LocalWorkspace.create({ workDir });
    const name = wanted ?? (await ws.stack())?.name;
    if (name === undefined) throw new StatusInputError("no stack selected: give --stack");
    // The config as `pulumi config --json` lists it: nothing decrypted (getAllConfig would
    // decrypt every secret of the stack: the nodes' keys have no business on a monitoring box).
    const env = { ...process.env, ...(ws.pulumiHome ? { PULUMI_HOME: ws.pulumiHome } : {}), ...ws.envVars };
    const listConfig = promisify(execFile)(ws.pulumiCommand.command, ["config", "--json", "--stack", name], {
        cwd: ws.workDir,
        env,
        maxBuffer: 64 << 20,
    });
    const [listed, outputs] = await Promise.all([listConfig, ws.stackOutputs(name)]);
    const config = JSON.parse(listed.stdout) as Record<string, ConfigValue>;
    const plan = planFromConfig(config, workDir);
    for (const w of plan.warnings) process.stderr.write(`warning: ${printable(w)}\n`);
    const found = targets(plan, outputs.hosts?.value);
    const shards = plan.spec.shards ?? [];
    // Then only the hosts' SSH keys are decrypted, one `pulumi config get` each.
    const keys = [
        ...new Set(
            found.flatMap((t) =>
                "secret" in t.key && config[`nodefleet:${t.key.secret}`] !== undefined ? [`nodefleet:${t.key.secret}`] : [],
            ),
        ),
    ];
    const secrets = Object.fromEntries(await Promise.all(keys.map(async (k) => [k, await ws.getConfig(name, k)] as const)));
    return { name, shards, targets: found, secrets, fileSecret: (key) => plan.secrets.get(key) || undefined };
}

/** The stacks to check: the ones named (or the selected one), and with --shards the others of its fleet. */
async function readStacks(workDir: string, args: StatusArgs): Promise<Stack[]> {
    const first = await readStack(workDir, args.stacks[0]);
    const names = [first.name, ...args.stacks.slice(1)];
    if (args.shards) {
        if (first.shards.length === 0)
            throw new StatusInputError(`--shards: stack ${first.name} is not split into shards (its fleet names no shards)`);
        for (const s of first.shards) if (!names.includes(s)) names.push(s);
    }
    return [first, ...(await Promise.all(names.slice(1).map((n) => readStack(workDir, n))))];
}

/** Several stacks' reports as one JSON document. */
export interface FleetStatus {
    readonly at: string;
    readonly healthy: boolean;
    readonly stacks: readonly StatusReport[];
}

async function round(stack: Stack, args: StatusArgs, cwd: string): Promise<StatusReport> {
    const results = await probeAll(stack.targets, {
        timeoutSeconds: args.timeout,
        parallel: args.parallel,
        cwd,
        secretKey: (key) => stack.secrets[`nodefleet:${key}`]?.value ?? stack.fileSecret(key),
    });
    return report(stack.name, stack.targets, results);
}

export async function main(argv: readonly string[], cwd = process.cwd()): Promise<number> {
    if (argv[0] === "check") return checkMain(argv.slice(1), cwd);
    if (argv[0] !== "status" || argv.includes("--help") || argv.includes("-h")) {
        process.stderr.write(`${USAGE}\n`);
        return argv[0] === "status" ? 0 : 2;
    }
    let args: StatusArgs;
    try {
        args = parseArgs(argv.slice(1));
    } catch (e) {
        if (!(e instanceof UsageError)) throw e;
        process.stderr.write(`nodefleet status: ${e.message}\n${USAGE}\n`);
        return 2;
    }
    let stacks: Stack[];
    const t0 = Date.now();
    try {
        stacks = await readStacks(cwd, args);
    } catch (e) {
        process.stderr.write(`nodefleet status: cannot read the stack: ${printable(firstLines(e))}\n`);
        return 2;
    }
    for (const stack of stacks)
        process.stderr.write(
            `nodefleet status: stack ${stack.name}, ${stack.targets.length} host(s), read in ${((Date.now() - t0) / 1000).toFixed(1)} s; checking over SSH\n`,
        );
    let status = 0;
    for (let n = 1; ; n++) {
        // The stacks' hosts at once, each stack with the --parallel hosts of its own.
        const reports = await Promise.all(stacks.map((stack) => round(stack, args, cwd)));
        const healthy = reports.every((r) => r.healthy);
        status = healthy ? 0 : 1;
        const doc: StatusReport | FleetStatus =
            reports.length === 1
                ? reports[0]!
                : {
                      at: reports
                          .map((r) => r.at)
                          .sort()
                          .pop()!,
                      healthy,
                      stacks: reports,
                  };
        const text = args.json
            ? `${JSON.stringify(doc)}\n`
            : printable(reports.map((r) => (reports.length === 1 ? "" : `stack ${r.stack}:\n`) + table(r)).join("\n"));
        if (args.watch !== undefined && !args.json && process.stdout.isTTY) process.stdout.write("\x1b[2J\x1b[H");
        process.stdout.write(text);
        if (args.watch === undefined || (args.count !== undefined && n >= args.count)) break;
        await new Promise((resolve) => setTimeout(resolve, args.watch! * 1000));
    }
    return status;
}

/** An error's message without a stack trace: the Automation API's errors carry the CLI's stderr. */
function firstLines(e: unknown): string {
    const text = e instanceof Error ? e.message : String(e);
    return text
        .split("\n")
        .filter((l) => l.trim() !== "")
        .slice(0, 12)
        .join("\n");
}

/**
 * Ends the process with `code` once stdout has taken everything written to it. process.exit() right
 * after a write to a pipe drops what the pipe had not taken yet: a thousand hosts' JSON report is
 * megabytes, and `nodefleet status --json | jq` got its first 64 KB.
 */
export function exitWhenWritten(code: number): void {
    process.stdout.write("", () => process.exit(code));
}

if (require.main === module) {
    // Ctrl-C ends `--watch`: a round's decrypted keys are removed first.
    for (const [signal, code] of [
        ["SIGINT", 130],
        ["SIGTERM", 143],
    ] as const) {
        process.on(signal, () => {
            removeKeyDirs();
            process.exit(code);
        });
    }
    main(process.argv.slice(2)).then(
        (code) => exitWhenWritten(code),
        (e: unknown) => {
            process.stderr.write(`nodefleet status: ${printable(e instanceof Error ? (e.stack ?? e.message) : String(e))}\n`);
            process.exit(2);
        },
    );
}
