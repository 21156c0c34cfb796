// `nodefleet check --stack S`: what must hold before `pulumi` can run the stack at all. Pulumi hands
// the stack's config, secrets decrypted, to the program and the policy pack in one environment
// variable that Linux caps; past it every run fails with "argument list too long" before nodefleet
// starts. This measures that variable as the language host would build it and refuses, with the
// fix, a config over the cap (docs/configuration.md, "A fleet in a file"). The pipeline runs it
// before each preview and up. Prints the size on stdout; exit 0 fine, 1 refused, 2 bad usage.
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { CONFIG_ENV_LIMIT, configEnvBytes, configSizeProblem } from "../components/config/definition";

export const CHECK_USAGE = "usage: nodefleet check --stack S   (needs the stack's passphrase or secrets provider: it sizes the config as pulumi decrypts it)";

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
        listed = (await promisify(execFile)("pulumi", ["config", "--json", "--show-secrets", "--stack", stack], { cwd, maxBuffer: 256 << 20 })).stdout;
    } catch (e) {
        const err = String((e as { stderr?: string }).stderr ?? e).split("\n").filter(Boolean).slice(0, 5).join("\n");
        process.stderr.write(`nodefleet check: cannot read stack ${stack}'s config: ${err}\n`);
        return 2;
    }
    const bytes = configEnvBytes(configValues(JSON.parse(listed) as Record<string, { value?: string }>));
    process.stdout.write(`stack ${stack}: config ${bytes} bytes of the ${CONFIG_ENV_LIMIT} one environment variable holds (${((100 * bytes) / CONFIG_ENV_LIMIT).toFixed(0)} %)\n`);
    const problem = configSizeProblem(bytes);
    if (problem === undefined) return 0;
    process.stderr.write(`nodefleet check: ${problem.refused ? "refused" : "warning"}: ${problem.message}\n`);
    return problem.refused ? 1 : 0;
}
