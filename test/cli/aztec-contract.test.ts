// Contract tests: what nodefleet renders for an Aztec 4.1.2 sequencer, handed to the real
// CLI from the npm registry (lab/aztec.sh, installed once into the cache). The real option parser
// reads the unit's argv and environment and the real config readers build the node's config, as
// `aztec start` does before it starts anything (lab/aztec/probe.mjs); the same for the
// registration's add-l1-validator. Each test also shows the contract failing on a deliberately
// wrong flag or variable name. What this cannot show: the node running (it stops at its blob
// client without a beacon API: see docs/roles.md) and the registration against real contracts
// (the e2e tier does that on the dev chain).
import { before, describe, it } from "node:test";
import * as assert from "node:assert/strict";
import { createHash } from "node:crypto";
import * as path from "node:path";
import { parseFleet } from "../../components/config/fleet";
import { renderSequencerKey, renderSequencerRegistration, renderSequencerUnit } from "../../components/roles/sequencer/node";
import { sequencerPaths } from "../../components/roles/sequencer/contract";
import { HOSTFILES_DIR } from "../../components/base/render";
import { aztecRelease, ADDR, baseFleet, SECRETS, secretSource, sequencerV4Settings, l1Urls } from "../support/fixtures";
import { aztecInstall, heredocOf, HOST_COMPUTED, probe, registrationSettings, type ProbeResult, unitLaunch } from "../support/aztec";

const Q = 1;
const sha = (v: string) => createHash("sha256").update(v).digest("hex");
const PUBLIC_IP = "198.51.100.20";

function spec(v4: boolean, mutate: (s: any) => void = () => {}) {
    const f = baseFleet();
    if (v4) f.nodes[Q].sequencer = sequencerV4Settings();
    mutate(f.nodes[Q].sequencer);
    return parseFleet(f, secretSource()).spec.nodes[Q] as Extract<ReturnType<typeof parseFleet>["spec"]["nodes"][number], { role: "sequencer" }>;
}

/** The unit and its env file as the host gets them. */
function launch(node: ReturnType<typeof spec>) {
    const unit = renderSequencerUnit(node, "/data", aztecRelease(), PUBLIC_IP);
    const key = renderSequencerKey(node, "/data", SECRETS.sequencerKey!, node.sequencer.version === "4.1.2" ? SECRETS.blsKey : undefined, l1Urls(node));
    return unitLaunch(unit, heredocOf(key, sequencerPaths(node, "/data").envFile));
}

/** Where the CLI's reading of a start differs from what nodefleet meant; empty when the contract holds. */
function startIssues(r: ProbeResult, node: ReturnType<typeof spec>): string[] {
    const s = node.sequencer as any;
    const issues: string[] = [];
    if (r.error) issues.push(`parser: ${r.error.trim()}`);
    for (const [name, how] of Object.entries(r.env)) if (how !== "option" && how !== "direct" && how !== "config") issues.push(`${name}: ${how}`);
    const p = r.parsed;
    if (!p) return [...issues, "no config"];
    const want: Record<string, unknown> = {
        modules: ["node", "archiver", "sequencer"],
        network: s.network,
        port: 8080,
        adminPort: 8880,
        l1RpcUrls: s.l1RpcUrls,
        l1ChainId: s.l1ChainId,
        l1ConsensusHostUrls: s.l1ConsensusHostUrls,
        registryAddress: s.registryAddress?.toLowerCase() ?? null,
        coinbase: s.coinbase.toLowerCase(),
        p2pIp: PUBLIC_IP,
        p2pPort: 40400,
        dataDirectory: "/data/sequencer-1/data",
        // Without it 4.1.2 starts no P2P at all (the real node: no 40400 listener, no peerId).
        p2pEnabled: true,
        // The admin API key's hash, which the key step computes on the host (never the key itself).
        adminApiKeyHash: HOST_COMPUTED,
        validatorKeys: [sha(SECRETS.sequencerKey!)],
        ethereumSlotDuration: s.l1SlotSeconds ?? 12,
    };
    for (const [k, v] of Object.entries(want)) if (JSON.stringify(p[k]) !== JSON.stringify(v)) issues.push(`${k}: the CLI has ${JSON.stringify(p[k])}, nodefleet meant ${JSON.stringify(v)}`);
    return issues;
}

describe("Aztec 4.1.2 contract: the real CLI reads what nodefleet renders", () => {
    let install: string;
    before(() => {
        install = aztecInstall();
    });

    for (const [label, mutate] of [
        ["testnet, release runtime", (s: any) => (s.runtime = "release")],
        ["a local L1 (the dev chain's shape), docker runtime", (s: any) => Object.assign(s, { network: "local", l1ChainId: 16661, registryAddress: ADDR.b, l1SlotSeconds: 2 })],
    ] as const) {
        it(`start (${label}): every flag parses, every variable is a primary one, and the node's config holds each value`, () => {
            const node = spec(true, mutate);
            const { argv, env } = launch(node);
            const r = probe(install, argv, env);
            assert.deepEqual(startIssues(r, node), []);
            assert.deepEqual(Object.keys(r.env).sort(), Object.keys(env).sort(), "every variable the unit sets was classified");
        });
    }

    it("fails on a deliberately wrong flag, a fallback-only or unread variable, and a flag the CLI drops", () => {
        const node = spec(true, (s) => Object.assign(s, { network: "local", l1ChainId: 16661, registryAddress: ADDR.b, l1SlotSeconds: 2 }));
        const { argv, env } = launch(node);
        const rename = (words: string[], from: string, to: string) => words.map((w) => (w === from ? to : w));
        const renameEnv = (from: string, to: string) => Object.fromEntries(Object.entries(env).map(([k, v]) => [k === from ? to : k, v]));

        const flag = startIssues(probe(install, rename(argv, "--sequencer.coinbase", "--sequencer.coinBase"), env), node);
        assert.ok(flag.some((i) => /parser: error: unknown option '--sequencer\.coinBase'/.test(i)), flag.join("\n"));

        // The 2.x name of the key variable: 4.1.2 reads it only as VALIDATOR_PRIVATE_KEYS's fallback.
        const fallback = startIssues(probe(install, argv, renameEnv("VALIDATOR_PRIVATE_KEYS", "VALIDATOR_PRIVATE_KEY")), node);
        assert.ok(fallback.includes("VALIDATOR_PRIVATE_KEY: fallback"), fallback.join("\n"));

        const slot = startIssues(probe(install, argv, renameEnv("ETHEREUM_SLOT_DURATION", "ETHEREUM_SLOT_SECONDS")), node);
        assert.ok(slot.includes("ETHEREUM_SLOT_SECONDS: unread") && slot.includes("ethereumSlotDuration: the CLI has 12, nodefleet meant 2"), slot.join("\n"));

        const p2p = startIssues(probe(install, argv, renameEnv("P2P_ENABLED", "P2P_ENABLE")), node);
        assert.ok(p2p.includes("P2P_ENABLE: unread") && p2p.some((i) => i.startsWith("p2pEnabled: the CLI has")), p2p.join("\n"));

        const unread = startIssues(probe(install, argv, renameEnv("DATA_DIRECTORY", "DATA_DIR")), node);
        assert.ok(unread.includes("DATA_DIR: unread"), unread.join("\n"));
        assert.ok(unread.some((i) => i.startsWith("dataDirectory: the CLI has")), unread.join("\n"));

        // --registry-address parses, and the node's config never gets it (why nodefleet sets REGISTRY_CONTRACT_ADDRESS).
        const { REGISTRY_CONTRACT_ADDRESS: _r, ...withoutRegistry } = env;
        const dropped = startIssues(probe(install, [...argv, "--registry-address", ADDR.b], withoutRegistry), node);
        assert.deepEqual(dropped, [`registryAddress: the CLI has null, nodefleet meant "${ADDR.b.toLowerCase()}"`]);
    });

    it("a 2.0.2 unit is not a 4.1.2 one: its key variable would be read only as a fallback", () => {
        const node = spec(false, (s) => (s.runtime = "release"));
        const r = probe(install, launch(node).argv, launch(node).env);
        assert.equal(r.error, null);
        assert.equal(r.env.VALIDATOR_PRIVATE_KEY, "fallback");
    });

    it("add-l1-validator: sender key from PRIVATE_KEY, BLS key through the argv preload (not the command line), attester, withdrawer, rollup, chain id", () => {
        const node = spec(true);
        const settings = registrationSettings(renderSequencerRegistration(node, "/data", "aztec"));
        const key = renderSequencerKey(node, "/data", SECRETS.sequencerKey!, SECRETS.blsKey, l1Urls(node));
        const registerEnv = Object.fromEntries(heredocOf(key, settings.registerEnvFile).trim().split("\n").map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]));
        const preload = path.join(HOSTFILES_DIR, "aztec-argv.mjs");
        const r = probe(install, settings.args, registerEnv, preload);
        assert.equal(r.error, null);
        const s = node.sequencer as any;
        assert.deepEqual(r.parsed, {
            command: "add-l1-validator",
            l1RpcUrls: s.l1RpcUrls,
            l1ChainId: s.l1ChainId,
            attester: s.validatorAddress.toLowerCase(),
            withdrawer: s.withdrawerAddress.toLowerCase(),
            rollup: s.rollupAddress.toLowerCase(),
            privateKey: sha(SECRETS.sequencerKey!),
            mnemonic: null,
            blsSecretKey: sha(`0x${BigInt(SECRETS.blsKey!).toString(16)}`),
            cmdlineHasBls: false,
        });
        assert.equal(r.env.PRIVATE_KEY, "option");
        assert.ok(!r.flags.includes("--private-key"));
        // Without PRIVATE_KEY the CLI sends from its public test mnemonic: why aztec-register.py refuses to run then.
        const { PRIVATE_KEY: _k, ...noKey } = registerEnv;
        const fallback = probe(install, settings.args, noKey, preload);
        assert.equal(fallback.parsed!.privateKey, null);
        assert.equal(fallback.parsed!.mnemonic, "test test test test test test test test test test test junk");
        // A wrong flag fails.
        const wrong = probe(install, settings.args.map((a: string) => (a === "--withdrawer" ? "--withdrawer-address" : a)), registerEnv, preload);
        assert.match(wrong.error ?? "", /unknown option '--withdrawer-address'/);
    });
});
