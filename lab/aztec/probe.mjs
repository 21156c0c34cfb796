// The contract probe: runs the real Aztec CLI's option parser and config readers on an
// argv and environment, without starting anything, and prints what the CLI made of them as JSON.
// The cli tier (test/cli/aztec-contract.test.ts) feeds it what nodefleet renders.
//
//   node probe.mjs INSTALL_DIR -- ARGV...     (the environment is the probe's own)
//
// For `start`: the parser's error if it refuses the argv, else the node's config as start_node.js
// builds it (env-read config under the namespace-extracted options), the sequencer's, and the
// ports the start action reads. For `add-l1-validator`: the options its action gets. For every
// variable set in the environment: how the CLI reads it ("option": the primary variable of a
// start option; "fallback": only as another's fallback; "config": the variable of a setting of the
// node's config that no start flag carries, such as ETHEREUM_SLOT_DURATION; "direct": read by name
// in the code; "unread"). No secret is printed: keys are reported by sha256.
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { pathToFileURL } from "node:url";

const [dir, marker, ...argv] = process.argv.slice(2);
if (!dir || marker !== "--") {
    process.stderr.write("usage: node probe.mjs INSTALL_DIR -- ARGV...\n");
    process.exit(64);
}
const modules = path.join(dir, "node_modules");
const load = (rel) => import(pathToFileURL(path.join(modules, rel)).href);
const sha = (v) => (v === undefined || v === null ? null : createHash("sha256").update(String(v)).digest("hex"));
const secret = (v) => (v && typeof v.getValue === "function" ? v.getValue() : v);
const text = (v) => (v === undefined || v === null ? null : String(v));

// The variables the probe and the process itself bring are not nodefleet's.
const OWN = new Set(["PATH", "HOME", "PWD", "SHLVL", "_", "NODE_OPTIONS", "LANG", "TERM", "TMPDIR", "USER", "LOGNAME", "SHELL", "OLDPWD", "LC_ALL"]);
const given = Object.keys(process.env).filter((k) => !OWN.has(k) && !k.startsWith("NODEFLEET_PROBE"));

const { Command } = await load("commander/index.js");
const { injectAztecCommands } = await load("@aztec/aztec/dest/cli/index.js");
const { aztecStartOptions } = await load("@aztec/aztec/dest/cli/aztec_start_options.js");
const { injectCommands: injectL1Commands } = await load("@aztec/cli/dest/cmds/l1/index.js");
const { createConsoleLogger, createLogger } = await load("@aztec/foundation/dest/log/index.js");

// Flags only: the argv may hold what the argv preload appended (a key).
const out = { flags: argv.filter((w) => w.startsWith("-")), parsed: null, error: null, env: {} };

// How each given variable is read.
const optionEnv = new Set(), fallbackEnv = new Set();
for (const group of Object.values(aztecStartOptions))
    for (const o of group) {
        if (o.env) optionEnv.add(o.env);
        for (const f of o.fallback ?? []) fallbackEnv.add(f);
    }
// The node's config settings (what start_node.js reads from the environment), by variable.
const { aztecNodeConfigMappings } = await load("@aztec/aztec-node/dest/aztec-node/config.js");
const configEnv = new Set(Object.values(aztecNodeConfigMappings).map((m) => m.env).filter(Boolean));
const direct = directReads(path.join(modules, "@aztec"), new Set(given));
for (const name of given)
    out.env[name] = optionEnv.has(name) ? "option" : fallbackEnv.has(name) ? "fallback" : configEnv.has(name) ? "config" : direct.has(name) ? "direct" : "unread";

// The real program, its actions replaced by a capture.
const program = new Command("aztec").exitOverride().enablePositionalOptions();
injectAztecCommands(program, createConsoleLogger(), createLogger("probe"));
injectL1Commands(program, createConsoleLogger(), createLogger("probe"));
let captured = null;
for (const command of program.commands) {
    command.exitOverride();
    command.configureOutput({ writeErr: (s) => (out.error = (out.error ?? "") + s), writeOut: () => {} });
    command.action((options) => (captured = { command: command.name(), options }));
}
try {
    await program.parseAsync(["node", "aztec", ...argv]);
} catch (e) {
    out.error ??= e.message ?? String(e);
}

if (captured?.command === "start") out.parsed = await startConfig(captured.options);
else if (captured?.command === "add-l1-validator") {
    out.parsed = addValidator(captured.options);
    // PRIVATE_KEY is --private-key's default (read once, destructured from process.env).
    if (process.env.PRIVATE_KEY !== undefined && captured.options.privateKey === process.env.PRIVATE_KEY) out.env.PRIVATE_KEY = "option";
}
else if (captured) out.parsed = { command: captured.command };
process.stdout.write(JSON.stringify(out, null, 2) + "\n");
process.exit(0);

async function startConfig(options) {
    // As cmds/start_node.js: the env-read config, under the options extracted for 'node'.
    const { getConfigEnvVars } = await load("@aztec/aztec-node/dest/aztec-node/config.js");
    const { extractNamespacedOptions, extractRelevantOptions } = await load("@aztec/aztec/dest/cli/util.js");
    const fromEnv = getConfigEnvVars();
    const node = { ...fromEnv, ...extractRelevantOptions(options, aztecNodeConfigMappings, "node") };
    const sequencer = { ...fromEnv, ...extractNamespacedOptions(options, "sequencer") };
    const keys = secret(sequencer.validatorPrivateKeys) ?? [];
    return {
        command: "start",
        modules: ["node", "archiver", "sequencer"].filter((m) => options[m] === true),
        network: text(options.network),
        port: options.port,
        adminPort: options.adminPort,
        l1RpcUrls: node.l1RpcUrls ?? null,
        l1ChainId: node.l1ChainId ?? null,
        l1ConsensusHostUrls: node.l1ConsensusHostUrls ?? null,
        registryAddress: text(node.l1Contracts?.registryAddress),
        coinbase: text(sequencer.coinbase),
        p2pIp: text(node.p2pIp),
        p2pPort: node.p2pPort ?? null,
        dataDirectory: text(node.dataDirectory),
        p2pEnabled: node.p2pEnabled ?? null,
        ethereumSlotDuration: node.ethereumSlotDuration ?? null,
        adminApiKeyHash: text(options.adminApiKeyHash),
        validatorKeys: keys.map((k) => sha(secret(k))),
    };
}

function addValidator(options) {
    return {
        command: "add-l1-validator",
        l1RpcUrls: options.l1RpcUrls ?? null,
        l1ChainId: options.l1ChainId ?? null,
        attester: text(options.attester),
        withdrawer: text(options.withdrawer),
        rollup: text(options.rollup),
        privateKey: sha(options.privateKey),
        // The sender when privateKey is absent: the CLI's default mnemonic.
        mnemonic: options.privateKey ? null : options.mnemonic ?? null,
        blsSecretKey: options.blsSecretKey === undefined ? null : sha(`0x${BigInt(options.blsSecretKey).toString(16)}`),
        cmdlineHasBls: fs.readFileSync("/proc/self/cmdline", "utf8").includes("--bls-secret-key"),
    };
}

/** Which of `names` the Aztec packages read as process.env.NAME or process.env['NAME']. */
function directReads(root, names) {
    const found = new Set();
    const walk = (d) => {
        for (const e of fs.readdirSync(d, { withFileTypes: true })) {
            const p = path.join(d, e.name);
            if (e.isDirectory()) {
                if (e.name !== "node_modules" && e.name !== "src") walk(p);
            } else if (e.name.endsWith(".js")) {
                const body = fs.readFileSync(p, "utf8");
                for (const n of names) if (!found.has(n) && new RegExp(`process\\.env(\\.${n}\\b|\\[['"]${n}['"]\\])`).test(body)) found.add(n);
            }
        }
    };
    walk(root);
    return found;
}
