// `nodefleet check --stack S`: what must hold before `pulumi` can run the stack at all. Pulumi hands
// the stack's config, secrets decrypted, to the program and the policy pack in one environment
// variable that Linux caps; past it every run fails with "argument list too long" before nodefleet
// starts. This measures that variable as the language host would build it and refuses, with the
// fix, a config over the cap (docs/configuration.md, "A fleet in a file"). On stock Pulumi
// (NODEFLEET_TOOLCHAIN=stock, as the workflows run it) it also warns of a stack too large for it:
// there a first `up` grows with the square of the stack's nodes (docs/gitops.md, "Sizing"). The
// pipeline runs it before each preview and up. Prints the size on stdout; exit 0 fine (a warning
// included), 1 refused, 2 bad usage.
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { CONFIG_ENV_LIMIT, configEnvBytes, configSizeProblem, readFleetDefinition } from "../components/config/definition";

/**
 * The most nodes one stack should hold on stock Pulumi. Measured on 2 cores as the pipeline runs a
 * shard of a 1,000-node fleet (`scripts/bench.sh steady`: stack.sh on an S3 backend; docs/gitops.md,
 * "Sizing"): a first up of 100 nodes took 339 CPU-s, 314 s and a 2.5 GB CLI, 50 nodes 103 CPU-s,
 * 104 s and 1.3 GB, 25 nodes 52 CPU-s and 57 s; with 20 runners at once, shards of 50 bring the
 * fleet up as soon as shards of 25 do (one wave of 104-119 s, two of 57 s) on half the runners, and
 * in a third of the time shards of 100 take (314 s).
 */
export const STOCK_STACK_NODES = 50;

/** The warning for a stack of `nodes` nodes run on `toolchain` (NODEFLEET_TOOLCHAIN), if it is too large for it. */
export function stockSizeWarning(stack: string, nodes: number, toolchain: string | undefined): string | undefined {
    if (toolchain !== "stock" || nodes <= STOCK_STACK_NODES) return undefined;
    return (
        `stack ${stack} holds ${nodes} nodes: on stock Pulumi a first up grows with the square of the nodes in one stack ` +
        `(measured on 2 cores as the pipeline runs it: 100 nodes 339 CPU-s, 314 s and a 2.5 GB CLI; 50 nodes 103 CPU-s, 104 s and 1.3 GB). ` +
        `Split the fleet into shards of at most ${STOCK_STACK_NODES} nodes (docs/gitops.md, "Shards"; 1,000 nodes as 20 shards on 20 runners: about 2 minutes), ` +
        `or run nodefleet's toolchain (NODEFLEET_TOOLCHAIN=nodefleet: 250 nodes 210 CPU-s, 176 s and 451 MB)`
    );
}

/** The nodes of the stack's fleet (inline or in its fleet file), or undefined when it cannot be read here (the program says why). */
export function fleetNodes(
    listed: Record<string, { value?: string; objectValue?: unknown; secret?: boolean }>,
    projectDir: string,
): number | undefined {
    const values = configValues(listed);
    try {
        const fleet = readFleetDefinition((key) => {
            const full = `nodefleet:${key}`;
            return full in listed ? { value: values[full]!, secret: listed[full]!.secret === true } : undefined;
        }, projectDir);
        const nodes = (fleet.raw as { nodes?: unknown } | null)?.nodes;
        return Array.isArray(nodes) ? nodes.length : undefined;
    } catch {
        return undefined;
    }
}

export const CHECK_USAGE =
    "usage: nodefleet check --stack S   (needs the stack's passphrase or secrets provider: it sizes the config as pulumi decrypts it)";

/** The config values by full key, as `pulumi config --json --show-secrets` lists them. */
export function configValues(listed: Record<string, { value?: string; objectValue?: unknown }>): Record<string, string> {
    const out: Record<string, string> = {};
    for (const [key, v] of Object.entries(listed)) out[key] = v.value ?? (v.objectValue === undefined ? "" : JSON.stringify(v.objectValue));
    return out;
}

export async function checkMain(argv: readonly string[], cwd = process.cwd()): Promise<number> {
    const i = argv.indexOf("--stack");
    const stack = i >= 0 ? argv[i + 1] : undefined;
    if (stack === undefined || !/^[A-Za-z0-9._/-]+$/.test(stack) || argv.length !== 2) {
        process.stderr.write(`${CHECK_USAGE}\n`);
        return 2;
    }
    let listed: string;
    try {
        listed = (
            await promisify(execFile)("pulumi", ["config", "--json", "--show-secrets", "--stack", stack], { cwd, maxBuffer: 256 << 20 })
        ).stdout;
    } catch (e) {
        const err = String((e as { stderr?: string }).stderr ?? e)
            .split("\n")
            .filter(Boolean)
            .slice(0, 5)
            .join("\n");
        process.stderr.write(`nodefleet check: cannot read stack ${stack}'s config: ${err}\n`);
        return 2;
    }
    const config = JSON.parse(listed) as Record<string, { value?: string; objectValue?: unknown; secret?: boolean }>;
    const bytes = configEnvBytes(configValues(config));
    process.stdout.write(
        `stack ${stack}: config ${bytes} bytes of the ${CONFIG_ENV_LIMIT} one environment variable holds (${((100 * bytes) / CONFIG_ENV_LIMIT).toFixed(0)} %)\n`,
    );
    const nodes = fleetNodes(config, cwd);
    const large = nodes === undefined ? undefined : stockSizeWarning(stack, nodes, process.env.NODEFLEET_TOOLCHAIN);
    if (large !== undefined) process.stderr.write(`nodefleet check: warning: ${large}\n`);
    const problem = configSizeProblem(bytes);
    if (problem === undefined) return 0;
    process.stderr.write(`nodefleet check: ${problem.refused ? "refused" : "warning"}: ${problem.message}\n`);
    return problem.refused ? 1 : 0;
}
