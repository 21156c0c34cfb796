// The mistakes operators really make: fields that are each well-formed but disagree
// with each other or with the world. Keys against the addresses and files that name them,
// addresses nobody can sign for where funds go or contracts are called, references to nothing.
// Every refusal names its config paths; no secret value appears in any message (checked).
import { describe, it } from "node:test";
import * as assert from "node:assert/strict";
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import fc from "fast-check";
import { parseFleet } from "../../components/config/fleet";
import { FleetConfigError } from "../../components/config/errors";
import * as v from "../../components/values/validators";
import { BLS_ORDER } from "../../components/values/bls12381";
import { ADDR, SECRETS, SEQUENCER_KEY_ADDRESS, baseFleet, secretSource, sequencerV4Settings, validatorKeyJson } from "../support/fixtures";

const S = 0, Q = 1, V = 2;

/** The issues parseFleet reports, or [] when it accepts. */
function issuesOf(fleet: any, secrets: Record<string, string> = SECRETS): string[] {
    try {
        parseFleet(fleet, secretSource(secrets));
        return [];
    } catch (e) {
        assert.ok(e instanceof FleetConfigError, String(e));
        return [...e.issues];
    }
}

/** No run of 12 characters of any secret value appears in the text. */
function assertNoSecret(text: string, secrets: Record<string, string>): void {
    for (const [name, value] of Object.entries(secrets)) {
        const material = name === "validatorKey" || name === "validatorKey2" ? (JSON.parse(value) as { priv_key: { value: string } }).priv_key.value : value.replace(/^0x/, "");
        for (let i = 0; i + 12 <= material.length; i += 4) assert.ok(!text.includes(material.slice(i, i + 12)), `the message shows part of secret ${name}:\n${text}`);
    }
}

/** Edits a priv_validator_key.json. */
function editKey(json: string, edit: (k: any) => void): string {
    const k = JSON.parse(json);
    edit(k);
    return JSON.stringify(k);
}

describe("keys agree with the addresses and files that name them", () => {
    it("the fixtures' key is the key of its address (secp256k1 test vectors: key 1, the web3 documentation's key)", () => {
        assert.equal(v.addressOfPrivateKey(`0x${"0".repeat(63)}1`), "0x7E5F4552091A69125d5DfCb7b8C2659029395Bdf");
        assert.equal(v.addressOfPrivateKey(SECRETS.sequencerKey), SEQUENCER_KEY_ADDRESS);
        assert.deepEqual(issuesOf(baseFleet()), []);
    });

    for (const [version, settings] of [["2.0.2", () => ({})], ["4.1.2", sequencerV4Settings]] as const) {
        it(`sequencer ${version}: validatorAddress that is not the key's address is refused, naming both paths, the key's address and no key`, () => {
            const f = baseFleet();
            if (version === "4.1.2") f.nodes[Q].sequencer = settings();
            f.nodes[Q].sequencer.validatorAddress = ADDR.c;
            const issues = issuesOf(f);
            assert.equal(issues.length, 1, issues.join("\n"));
            assert.match(issues[0]!, /^nodes\[1\]\.sequencer\.validatorAddress: 0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB is not the address of the key nodes\[1\]\.sequencer\.validatorPrivateKeySecret names; that key's address is 0x2c7536E3605D9C16a7a3D7b1898e529396a65c23/);
            assertNoSecret(issues[0]!, SECRETS);
        });
    }

    it("the address compares without regard to case (a lower-case address of the right key is accepted)", () => {
        const f = baseFleet();
        f.nodes[Q].sequencer.validatorAddress = SEQUENCER_KEY_ADDRESS.toLowerCase();
        assert.deepEqual(issuesOf(f), []);
    });

    it("property: for any key, its own address is accepted and any other address is refused without showing the key", () => {
        const scalar = fc.bigInt({ min: 1n, max: (1n << 256n) - 1n }).filter((k) => v.privateKeyReason(`0x${k.toString(16).padStart(64, "0")}`) === undefined);
        fc.assert(
            fc.property(scalar, fc.uint8Array({ minLength: 20, maxLength: 20 }), (k, other) => {
                const key = `0x${k.toString(16).padStart(64, "0")}`;
                const own = v.addressOfPrivateKey(key);
                const secrets = { ...SECRETS, sequencerKey: key };
                const f = baseFleet();
                f.nodes[Q].sequencer.validatorAddress = own;
                assert.deepEqual(issuesOf(f, secrets), []);
                const wrong = `0x${Buffer.from(other).toString("hex")}`;
                if (wrong === own.toLowerCase() || v.unusableAddressReason(wrong)) return;
                f.nodes[Q].sequencer.validatorAddress = wrong;
                const issues = issuesOf(f, secrets);
                assert.equal(issues.length, 1);
                assert.ok(issues[0]!.includes(`that key's address is ${own}`));
                assert.ok(!issues[0]!.includes(key.slice(2, 14)) && !issues[0]!.includes(key.slice(-12)));
            }),
            { numRuns: 200, seed: 27 },
        );
    });

    const validatorKeyCases: [string, (json: string) => string, RegExp][] = [
        ["an address that is not derived from the key", (j) => editKey(j, (k) => (k.address = "ABCDEF0123456789ABCDEF0123456789ABCDEF01")), /address ABCDEF0123456789ABCDEF0123456789ABCDEF01 is not the address of this key: its pub_key derives [0-9A-F]{40}/],
        ["a pub_key of another key", (j) => editKey(j, (k) => (k.pub_key.value = JSON.parse(validatorKeyJson("other")).pub_key.value)), /pub_key\.value is not the public key of priv_key/],
        ["a priv_key cut short (32 bytes)", (j) => editKey(j, (k) => (k.priv_key.value = Buffer.from(k.priv_key.value, "base64").subarray(0, 32).toString("base64"))), /priv_key\.value must be the base64 of 64 bytes/],
        ["a priv_key whose halves are two keys", (j) => editKey(j, (k) => { const b = Buffer.from(k.priv_key.value, "base64"); b[0] ^= 1; k.priv_key.value = b.toString("base64"); }), /its second half is not the public key of its first/],
        ["a secp256k1 key", (j) => editKey(j, (k) => (k.priv_key.type = "tendermint/PrivKeySecp256k1")), /priv_key\.type must be tendermint\/PrivKeyEd25519/],
        ["no pub_key", (j) => editKey(j, (k) => delete k.pub_key), /pub_key must be \{type: tendermint\/PubKeyEd25519/],
        ["a priv_key that is not base64", (j) => editKey(j, (k) => (k.priv_key.value = "not base64!")), /priv_key\.value must be the base64 of 64 bytes/],
    ];
    for (const [name, edit, reason] of validatorKeyCases) {
        it(`priv_validator_key.json with ${name} is refused at validatorKeySecret, without the key`, () => {
            const secrets = { ...SECRETS, validatorKey: edit(SECRETS.validatorKey!) };
            const issues = issuesOf(baseFleet(), secrets);
            assert.equal(issues.length, 1, issues.join("\n"));
            assert.ok(issues[0]!.startsWith("nodes[2].validator.validatorKeySecret: the secret it names: "), issues[0]);
            assert.match(issues[0]!, reason);
            assertNoSecret(issues[0]!, secrets);
        });
    }

    it("a key file as CometBFT writes it (ed25519 from Node's own key generator) is accepted", () => {
        const { publicKey, privateKey } = crypto.generateKeyPairSync("ed25519");
        const pub = Buffer.from(publicKey.export({ format: "der", type: "spki" }).subarray(-32));
        const seed = Buffer.from(privateKey.export({ format: "der", type: "pkcs8" }).subarray(-32));
        const json = JSON.stringify({
            address: v.cometAddressOf(pub),
            pub_key: { type: "tendermint/PubKeyEd25519", value: pub.toString("base64") },
            priv_key: { type: "tendermint/PrivKeyEd25519", value: Buffer.concat([seed, pub]).toString("base64") },
        });
        assert.equal(v.validatorKeyFileReason(json), undefined);
        assert.deepEqual(issuesOf(baseFleet(), { ...SECRETS, validatorKey: json }), []);
    });

    // BLS12-381 (BeaconKit's beacond, 0gchaind's open core): a key file the real `beacond init` made
    // (the lab devnet's, lab/sim/release/devnet; the cli tier checks fresh ones) is the oracle.
    const BEACOND_KEY = fs.readFileSync(path.join(__dirname, "../../../lab/sim/release/devnet/priv_validator_key.json"), "utf8");
    it("a BLS12-381 key file as beacond writes it is accepted, by itself and as the validator's key", () => {
        assert.equal(JSON.parse(BEACOND_KEY).priv_key.type, "cometbft/PrivKeyBls12_381");
        assert.equal(v.validatorKeyFileReason(BEACOND_KEY), undefined);
        assert.deepEqual(issuesOf(baseFleet(), { ...SECRETS, validatorKey: BEACOND_KEY }), []);
    });
    const order = Buffer.from(BLS_ORDER.toString(16).padStart(64, "0"), "hex");
    const blsCases: [string, (k: any) => void, RegExp][] = [
        ["a secret not below the group order", (k) => (k.priv_key.value = order.toString("base64")), /priv_key\.value is not a BLS12-381 secret key: zero, or not below the group order/],
        ["a zero secret", (k) => (k.priv_key.value = Buffer.alloc(32).toString("base64")), /priv_key\.value is not a BLS12-381 secret key/],
        ["an ed25519 pub_key type", (k) => (k.pub_key.type = "tendermint/PubKeyEd25519"), /pub_key must be \{type: cometbft\/PubKeyBls12_381/],
        ["a compressed (48-byte) public key", (k) => (k.pub_key.value = Buffer.from(k.pub_key.value, "base64").subarray(0, 48).toString("base64")), /pub_key\.value must be the base64 of the 96-byte BLS12-381/],
        ["a 64-byte priv_key", (k) => (k.priv_key.value = Buffer.alloc(64, 1).toString("base64")), /priv_key\.value must be the base64 of 32 bytes \(the BLS12-381 secret scalar\)/],
        ["another address", (k) => (k.address = "ABCDEF0123456789ABCDEF0123456789ABCDEF01"), /address ABCDEF0123456789ABCDEF0123456789ABCDEF01 is not the address of this key: its pub_key derives 7FA259198AA22A41E80CE89330CAC44BE947C038/],
    ];
    for (const [name, edit, reason] of blsCases) {
        it(`a BLS12-381 key file with ${name} is refused, without the key`, () => {
            const bad = editKey(BEACOND_KEY, edit);
            const reasonText = v.validatorKeyFileReason(bad);
            assert.match(reasonText ?? "", reason);
            assert.ok(!(reasonText ?? "").includes(JSON.parse(BEACOND_KEY).priv_key.value));
        });
    }
    it("property: any one changed byte of a BLS12-381 secret is refused as a key the file's public key is not of", () => {
        fc.assert(
            fc.property(fc.nat({ max: 31 }), fc.integer({ min: 1, max: 255 }), (at, flip) => {
                const reason = v.validatorKeyFileReason(editKey(BEACOND_KEY, (k) => { const b = Buffer.from(k.priv_key.value, "base64"); b[at]! ^= flip; k.priv_key.value = b.toString("base64"); }));
                assert.match(reason ?? "", /pub_key\.value is not the public key of priv_key|not below the group order/);
            }),
            { numRuns: 40, seed: 40 },
        );
    });

    it("property: any ed25519 seed gives an accepted file, and any one changed byte of its key material is refused", () => {
        fc.assert(
            fc.property(fc.uint8Array({ minLength: 32, maxLength: 32 }), fc.nat(), fc.integer({ min: 1, max: 255 }), (seed, at, flip) => {
                const pub = v.ed25519PublicOfSeed(Buffer.from(seed));
                const file = { address: v.cometAddressOf(pub), pub_key: { type: "tendermint/PubKeyEd25519", value: pub.toString("base64") }, priv_key: { type: "tendermint/PrivKeyEd25519", value: Buffer.concat([Buffer.from(seed), pub]).toString("base64") } };
                assert.equal(v.validatorKeyFileReason(JSON.stringify(file)), undefined);
                const priv = Buffer.from(file.priv_key.value, "base64");
                priv[at % 64] ^= flip;
                const bad = JSON.stringify({ ...file, priv_key: { ...file.priv_key, value: priv.toString("base64") } });
                assert.notEqual(v.validatorKeyFileReason(bad), undefined);
            }),
            { numRuns: 100, seed: 27 },
        );
    });

    for (const [name, key, reason] of [
        ["zero", "00".repeat(32), /miner key is outside the secp256k1 range/],
        ["the group order", "fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141", /miner key is outside the secp256k1 range/],
        ["above the group order", "ff".repeat(32), /miner key is outside the secp256k1 range/],
    ] as const) {
        it(`a storage miner key that is ${name} is refused at minerKeySecret, without the key`, () => {
            const issues = issuesOf(baseFleet(), { ...SECRETS, minerKey: key });
            assert.equal(issues.length, 1, issues.join("\n"));
            assert.ok(issues[0]!.startsWith("nodes[0].storage.minerKeySecret: the secret it names: "));
            assert.match(issues[0]!, reason);
            assert.ok(!issues[0]!.includes(key.slice(0, 12)));
        });
    }

    it("property: a miner key is accepted exactly when it is a secp256k1 scalar", () => {
        const n = BigInt("0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141");
        fc.assert(
            fc.property(fc.oneof(fc.bigInt({ min: 0n, max: (1n << 256n) - 1n }), fc.bigInt({ min: n - 3n, max: n + 3n }), fc.constantFrom(0n, 1n)), (k) => {
                const key = k.toString(16).padStart(64, "0");
                assert.equal(v.minerKeyScalarReason(key) === undefined, k > 0n && k < n);
            }),
            { numRuns: 300, seed: 27 },
        );
    });
});

describe("no value that throws funds or control away", () => {
    const ZERO = `0x${"0".repeat(40)}`;
    const DEAD = "0x000000000000000000000000000000000000dEaD";
    const PRECOMPILE = `0x${"0".repeat(39)}1`;
    const fields: [string, string, (f: any, a: string) => void][] = [
        ["withdrawer", "nodes[1].sequencer.withdrawerAddress", (f, a) => (f.nodes[Q].sequencer = { ...sequencerV4Settings(), withdrawerAddress: a })],
        ["coinbase", "nodes[1].sequencer.coinbase", (f, a) => (f.nodes[Q].sequencer.coinbase = a)],
        ["rollup", "nodes[1].sequencer.rollupAddress", (f, a) => (f.nodes[Q].sequencer = { ...sequencerV4Settings(), rollupAddress: a })],
        ["registry (2.0.x)", "nodes[1].sequencer.registryAddress", (f, a) => (f.nodes[Q].sequencer.registryAddress = a)],
        ["registry (4.1.2 local)", "nodes[1].sequencer.registryAddress", (f, a) => (f.nodes[Q].sequencer = { ...sequencerV4Settings(), network: "local", l1ChainId: 16661, registryAddress: a })],
        ["staking asset handler", "nodes[1].sequencer.stakingAssetHandler", (f, a) => (f.nodes[Q].sequencer.stakingAssetHandler = a)],
        ["log contract", "nodes[0].storage.logContractAddress", (f, a) => (f.nodes[S].storage.logContractAddress = a)],
        ["mine contract", "nodes[0].storage.mineContractAddress", (f, a) => (f.nodes[S].storage.mineContractAddress = a)],
    ];
    for (const [what, at, set] of fields) {
        for (const [name, address, reason] of [["the zero address", ZERO, /the zero address/], ["0x…dEaD", DEAD, /the burn address/], ["a precompile", PRECOMPILE, /a precompile address/]] as const) {
            it(`${what}: ${name} is refused at ${at}`, () => {
                const f = baseFleet();
                set(f, address);
                const issues = issuesOf(f);
                assert.ok(issues.some((i) => i.startsWith(`${at}: `) && reason.test(i)), issues.join("\n"));
            });
        }
    }

    it("property: an address is refused exactly when nobody can sign for it (zero, 0x…dEaD, 0x…01 to 0x…0100), at every field", () => {
        const low = fc.bigInt({ min: 0n, max: 0x200n });
        const any = fc.bigInt({ min: 0n, max: (1n << 160n) - 1n });
        fc.assert(
            fc.property(fc.oneof(low, any, fc.constant(0xdeadn)), fc.constantFrom(...fields), (n, [, at, set]) => {
                const address = `0x${n.toString(16).padStart(40, "0")}`;
                const f = baseFleet();
                set(f, address);
                const refused = issuesOf(f).some((i) => i.startsWith(`${at}: `));
                assert.equal(refused, n <= 0x100n || n === 0xdeadn, `${at} = ${address}`);
            }),
            { numRuns: 300, seed: 27 },
        );
    });

    it("an ordinary address just above the precompiles (the dev chain's registry at 0x…a2ec1) is accepted", () => {
        const f = baseFleet();
        f.nodes[Q].sequencer.registryAddress = "0x00000000000000000000000000000000000a2ec1";
        assert.deepEqual(issuesOf(f), []);
        assert.equal(v.unusableAddressReason(`0x${"0".repeat(37)}101`), undefined);
    });
});

describe("references point at something real", () => {
    it("a secret that is not set is refused with the stack's secret key names, not the name given (it may be a pasted key)", () => {
        const f = baseFleet();
        f.nodes[Q].sequencer.validatorPrivateKeySecret = "sequencerKye";
        const issues = issuesOf(f);
        assert.equal(issues.length, 1, issues.join("\n"));
        assert.equal(issues[0], `nodes[1].sequencer.validatorPrivateKeySecret: the config key it names is not set (pulumi config set --secret <that name> …); the stack's secret keys: ${Object.keys(SECRETS).sort().join(", ")}`);
    });

    it("a release that does not exist is refused with the known release names", () => {
        const f = baseFleet();
        f.nodes[V].release = "0g-chian";
        assert.ok(issuesOf(f).includes('nodes[2].release: no release named "0g-chian" under releases (known: zgs, aztec, 0g-chain)'));
    });

    it("a host that does not exist is refused with the known host names", () => {
        const f = baseFleet();
        f.nodes[V].host = "h-validatr";
        assert.ok(issuesOf(f).some((i) => i.startsWith('nodes[2].host: no host named "h-validatr" under hosts (known: h-storage, h-sequencer, h-validator)')));
    });

    it("a validator cannot abandon the host it runs on", () => {
        const f = baseFleet();
        f.nodes[V].validator.abandonHost = "h-validator";
        assert.deepEqual(issuesOf(f), ['nodes[2].validator.abandonHost: "h-validator" is the host this validator runs on (nodes[2].host); abandonHost names the host it leaves']);
    });

    it("abandonHost must be a host name (it is checked against the host the validator last ran on at up)", () => {
        const f = baseFleet();
        f.nodes[V].validator.abandonHost = "Old Host";
        assert.ok(issuesOf(f).some((i) => i.startsWith("nodes[2].validator.abandonHost: host names are 2-32 lowercase letters")));
    });
});

describe("RPC URLs are secrets when they carry one", () => {
    const fields: [string, (f: any, u: unknown) => void][] = [
        ["nodes[0].storage.rpcEndpoints[0]", (f, u) => (f.nodes[S].storage.rpcEndpoints = [u])],
        ["nodes[1].sequencer.l1RpcUrls[0]", (f, u) => (f.nodes[Q].sequencer.l1RpcUrls = [u])],
        ["nodes[1].sequencer.l1ConsensusHostUrls[0]", (f, u) => (f.nodes[Q].sequencer.l1ConsensusHostUrls = [u])],
        ["nodes[2].validator.referenceRpcUrl", (f, u) => (f.nodes[V].validator.referenceRpcUrl = u)],
    ];
    const credentialed: [string, string, RegExp][] = [
        ["user:password@", "https://ops:hunter2secret@rpc.example.org/", /a credential in user:password@/],
        ["an apikey query parameter", "https://rpc.example.org/?apikey=Zz9Yy8Xx7Ww6", /a credential in its query \(parameter apikey\)/],
        ["an Alchemy-style key in the path", "https://eth-sepolia.g.alchemy.com/v2/k3yAbCdEfGhIjKlMnOpQrStUv", /what looks like an API key in its path/],
        ["an Infura-style project id", `https://sepolia.infura.io/v3/${"9aa3d95b3bc440fa88ea12eaa4456161"}`, /what looks like an API key in its path/],
    ];
    for (const [at, set] of fields) {
        for (const [what, url, reason] of credentialed) {
            it(`${at}: a plain URL with ${what} is refused, says how to store it, and is not echoed`, () => {
                const f = baseFleet();
                set(f, url);
                const issues = issuesOf(f);
                const mine = issues.filter((i) => i.startsWith(`${at}: `));
                assert.equal(mine.length, 1, issues.join("\n"));
                assert.match(mine[0]!, reason);
                assert.match(mine[0]!, /pulumi config set --secret <name>, which asks for the value\) and write \{secret: <name>\} here/);
                for (const part of ["hunter2secret", "Zz9Yy8Xx7Ww6", "k3yAbCdEfGhIjKlMnOpQrStUv", "9aa3d95b3bc440fa"]) assert.ok(!issues.join("\n").includes(part), `echoed ${part}`);
            });
        }

        it(`${at}: {secret: <name>} naming a URL in a secret is accepted; its value is checked without being shown`, () => {
            const f = baseFleet();
            set(f, { secret: "rpcWithKey" });
            assert.deepEqual(issuesOf(f, { ...SECRETS, rpcWithKey: "https://eth-sepolia.g.alchemy.com/v2/k3yAbCdEfGhIjKlMnOpQrStUv" }), []);
            for (const [bad, reason] of [["ftp://x.example/k3yAbCdEfGhIjKlMnOpQrStUv", /URL scheme must be http or https/], ["HTTPS://X.example/k3yAbCdEfGhIjKlMnOpQrStUv", /the URL is not in its canonical form/], ["https://x.example/$k3yAbCdEfGhIjKlMnOpQrStUv", /the URL holds "\$"/]] as const) {
                const issues = issuesOf(f, { ...SECRETS, rpcWithKey: bad });
                assert.equal(issues.length, 1, issues.join("\n"));
                assert.ok(issues[0]!.startsWith(`${at}.secret: the secret it names: `), issues[0]);
                assert.match(issues[0]!, reason);
                assert.ok(!issues[0]!.includes("k3yAbCdEf"), issues[0]);
            }
            assert.match(issuesOf(f)[0]!, new RegExp(`^${at.replace(/[[\].]/g, "\\$&")}\\.secret: the config key it names is not set`));
        });
    }

    it("a URL secret stored in plain text is refused; {secret} with another key is refused", () => {
        const f = baseFleet();
        f.nodes[S].storage.rpcEndpoints = [{ secret: "rpcWithKey" }];
        const plain = (() => {
            try {
                parseFleet(f, secretSource({ ...SECRETS, rpcWithKey: "https://rpc.example.org" }, ["rpcWithKey"]));
                return "";
            } catch (e) {
                return String(e);
            }
        })();
        assert.match(plain, /nodes\[0\]\.storage\.rpcEndpoints\[0\]\.secret: the config key it names is stored in plain text/);
        f.nodes[S].storage.rpcEndpoints = [{ secret: "rpcWithKey", url: "https://x.example" }];
        assert.ok(issuesOf(f).some((i) => i.startsWith("nodes[0].storage.rpcEndpoints[0]: ")), issuesOf(f).join("\n"));
        f.nodes[S].storage.rpcEndpoints = [42];
        assert.ok(issuesOf(f).includes("nodes[0].storage.rpcEndpoints[0]: expected an http(s) URL, or {secret: <name of a secret config key holding the URL>}"), issuesOf(f).join("\n"));
    });

    it("plain URLs without credentials stay plain config (public endpoints, the dev chain)", () => {
        for (const url of ["https://evmrpc-testnet.0g.ai", "http://10.0.2.2:8545", "https://ethereum-sepolia-rpc.publicnode.com", "https://rpc.ankr.com/eth_sepolia", "https://rpc.example.org/?chain=16661"]) {
            const f = baseFleet();
            f.nodes[S].storage.rpcEndpoints = [url];
            assert.deepEqual(issuesOf(f), [], url);
        }
    });

    it("property: a URL with a generated key in its path, query or user part is refused and none of the key appears", () => {
        const key = fc.stringMatching(/^[A-Za-z0-9]{24,40}$/).filter((k) => /[0-9]/.test(k) && /[A-Za-z]/.test(k));
        const place = fc.constantFrom(
            (k: string) => `https://rpc.example.org/v2/${k}`,
            (k: string) => `https://rpc.example.org/?api_key=${k}`,
            (k: string) => `https://rpc.example.org/?token=${k}&chain=1`,
            (k: string) => `https://ops:${k}@rpc.example.org/`,
            (k: string) => `https://${"x"}:${k}@rpc.example.org:8443/eth`,
        );
        fc.assert(
            fc.property(key, place, (k, at) => {
                const f = baseFleet();
                f.nodes[Q].sequencer.l1RpcUrls = [at(k)];
                const text = issuesOf(f).join("\n");
                assert.match(text, /nodes\[1\]\.sequencer\.l1RpcUrls\[0\]: this URL carries/);
                for (let i = 0; i + 8 <= k.length; i += 4) assert.ok(!text.includes(k.slice(i, i + 8)), text);
            }),
            { numRuns: 200, seed: 27 },
        );
    });
});
