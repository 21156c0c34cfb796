// Voting power in a validators' rollout (components/rollout/power.ts): the validator set read from
// a CometBFT RPC, and the batches refused when one would take more of a network's power offline
// than `rollout.maxOfflinePower`. The answers parsed here are the real beacond's (v1.1.0, the lab's
// validator network: test/fixtures/cometbft/); the RPC the program reads in the mock test is a
// local HTTP server answering in that shape. What this cannot prove: that the engine stops a real
// `up` before any step (the e2e tier's rollout scenario previews against the lab network's beacond).
import { after, before, describe, it } from "node:test";
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as http from "node:http";
import * as path from "node:path";
import * as pulumi from "@pulumi/pulumi";
import { rolloutSpec } from "../../components/config/rollout";
import { validatorKeyAddress } from "../../components/values/validators";
import { planRollout } from "../../components/rollout/plan";
import { parseStatus, parseValidatorsPage, percentOf, powerViolations, readValidatorSet, RpcAnswerError, type Get, type ValidatorPower } from "../../components/rollout/power";
import { buildStack } from "../support/stack";
import { baseFleet, existingHost, SECRETS, validatorNode } from "../support/fixtures";

const FIXTURES = path.resolve(__dirname, "../../../test/fixtures/cometbft");
const fixture = (name: string) => fs.readFileSync(path.join(FIXTURES, name), "utf8");

/** An RPC answering `/status` for NETWORK and `/validators` pages over SET (address → power), as beacond does. */
function rpc(network: string, set: [string, bigint][]): { get: Get; asked: string[] } {
    const asked: string[] = [];
    const get: Get = async (url) => {
        asked.push(url);
        const u = new URL(url);
        const body = (result: unknown) => ({ ok: true, status: 200, text: async () => JSON.stringify({ jsonrpc: "2.0", id: -1, result }) });
        if (u.pathname === "/status") return body({ node_info: { network } });
        const per = Number(u.searchParams.get("per_page"));
        const page = Number(u.searchParams.get("page"));
        const slice = set.slice((page - 1) * per, page * per);
        return body({
            block_height: u.searchParams.get("height") ?? "42",
            validators: slice.map(([address, power]) => ({ address, pub_key: {}, voting_power: String(power), proposer_priority: "0" })),
            count: String(slice.length),
            total: String(set.length),
        });
    };
    return { get, asked };
}

const hex40 = (i: number) => i.toString(16).toUpperCase().padStart(40, "0");

describe("voting power: the validator set", () => {
    it("parses the real beacond's /status and /validators answers", () => {
        assert.equal(parseStatus(fixture("beacond-1.1.0-status.json")), "beacond-2061");
        const page = parseValidatorsPage(fixture("beacond-1.1.0-validators.json"), 1);
        assert.equal(page.total, 2);
        assert.deepEqual(page.entries, [
            ["D394AE99FC2225EF36C36D2B756126914F0D81D3", 48_000_000_000n],
            ["BD01F5D80C532B2EE0128F3C39FDB14B4E866BA5", 32_000_000_000n],
        ]);
        // validator-1 of the lab network: its key's address is the second, 40% of the power.
        const key = fs.readFileSync(path.resolve(__dirname, "../../../lab/sim/release/vmnet/priv_validator_key.json"), "utf8");
        assert.equal(validatorKeyAddress(key), "BD01F5D80C532B2EE0128F3C39FDB14B4E866BA5");
        assert.equal(percentOf(32_000_000_000n, 80_000_000_000n), "40.0%");
    });

    it("reads every page at the first page's height, and adds the power up", async () => {
        const set = Array.from({ length: 150 }, (_, i): [string, bigint] => [hex40(i + 1), BigInt(i + 1)]);
        const { get, asked } = rpc("zgtendermint_16661-1", set);
        const r = await readValidatorSet("http://rpc.example:26657/", get);
        assert.equal(r.network, "zgtendermint_16661-1");
        assert.equal(r.power.size, 150);
        assert.equal(r.total, 11_325n);
        assert.deepEqual(asked, [
            "http://rpc.example:26657/status",
            "http://rpc.example:26657/validators?per_page=100&page=1",
            "http://rpc.example:26657/validators?per_page=100&page=2&height=42",
        ]);
    });

    it("refuses a bad answer, naming the call and the field, never echoing the answer", async () => {
        const answer = (status: number, text: string): Get => async (url) => (url.endsWith("/status") ? { ok: true, status: 200, text: async () => fixture("beacond-1.1.0-status.json") } : { ok: status === 200, status, text: async () => text });
        const page = (validators: unknown, total = "1") => JSON.stringify({ result: { block_height: "5", validators, count: "1", total } });
        const cases: [Get, RegExp][] = [
            [answer(502, "bad gateway"), /^\/validators page 1: HTTP 502$/],
            [answer(200, "<html>secret-token</html>"), /^\/validators page 1: the answer is not JSON$/],
            [answer(200, JSON.stringify({ error: { message: "height 9 must be less than or equal to the current blockchain height 5" } })), /^\/validators page 1: error "height 9 must be/],
            [answer(200, page([{ address: hex40(1), voting_power: "-5" }])), /result\.validators\[0\]\.voting_power: not a whole number/],
            [answer(200, page([{ address: hex40(1), voting_power: 5 }])), /result\.validators\[0\]\.voting_power: not a string/],
            [answer(200, page([{ address: "zz", voting_power: "5" }])), /result\.validators\[0\]\.address: not 20 bytes of hex/],
            [answer(200, page([{ address: hex40(1) }])), /result\.validators\[0\]\.voting_power: missing/],
            [answer(200, page({})), /result\.validators: not an array/],
            [answer(200, page([{ address: hex40(1), voting_power: "0" }])), /the set holds no voting power/],
            [async (url) => (url.endsWith("/status") ? { ok: true, status: 200, text: async () => fixture("beacond-1.1.0-status.json") } : { ok: true, status: 200, text: async () => page(/[?&]page=1(&|$)/.test(url) ? [{ address: hex40(1), voting_power: "1" }] : [], "3") }), /result\.total says 3 validators, the pages hold 1/],
            [answer(200, page([{ address: hex40(1), voting_power: "1" }, { address: hex40(1).toLowerCase(), voting_power: "1" }], "2")), /validator 0{39}1 listed twice/],
            [async () => { throw Object.assign(new Error("aborted"), { name: "TimeoutError" }); }, /^\/status: no answer \(no answer within 10 s\)$/],
        ];
        for (const [get, message] of cases) {
            await assert.rejects(readValidatorSet("http://rpc.example:26657", get), (e: unknown) => {
                assert.ok(e instanceof RpcAnswerError, String(e));
                assert.match(e.message, message);
                assert.doesNotMatch(e.message, /secret-token|bad gateway/);
                return true;
            });
        }
        // A connection closed under a request is tried once more; a timeout is not.
        let calls = 0;
        const closedOnce: Get = async (url) => {
            if (calls++ === 0) throw Object.assign(new TypeError("fetch failed"), { cause: { code: "UND_ERR_SOCKET" } });
            return rpc("net-a", [[hex40(1), 5n]]).get(url);
        };
        assert.equal((await readValidatorSet("http://x", closedOnce)).total, 5n);
        let timeouts = 0;
        const slow: Get = async () => {
            timeouts++;
            throw Object.assign(new Error("aborted"), { name: "TimeoutError" });
        };
        await assert.rejects(readValidatorSet("http://x", slow), /no answer within 10 s/);
        assert.equal(timeouts, 1, "a timeout is not tried again");
        const refused: Get = async () => {
            throw Object.assign(new TypeError("fetch failed: http://user:secret@x"), { cause: { code: "ECONNREFUSED" } });
        };
        await assert.rejects(readValidatorSet("http://x", refused), (e: Error) => e.message === "/status: no answer (ECONNREFUSED)");
        const badStatus: Get = async () => ({ ok: true, status: 200, text: async () => JSON.stringify({ result: { node_info: { network: "a b;rm" } } }) });
        await assert.rejects(readValidatorSet("http://x", badStatus), /\/status: result\.node_info\.network: not a chain id/);
    });
});

describe("voting power: the plan", () => {
    const nodes = ["validator-1", "validator-2", "validator-3"].map((name) => ({ name, role: "validator" as const }));
    const power = (p: Record<string, [string, number]>, total: number): Map<string, ValidatorPower> =>
        new Map(Object.entries(p).map(([node, [network, v]]) => [node, { network, power: BigInt(v), total: BigInt(total) }]));
    const plan = (batchSize: number) => planRollout(nodes, new Set(nodes.map((n) => n.name)), rolloutSpec.parse({ roles: { validator: { batchSize } } }));

    it("refuses a batch over the limit with its figures, and passes one within it", () => {
        const p = power({ "validator-1": ["net-a", 20], "validator-2": ["net-a", 15], "validator-3": ["net-a", 10] }, 100);
        const refused = powerViolations(plan(2), p, 30);
        assert.equal(refused.length, 1, refused.join("\n"));
        assert.match(refused[0]!, /^rollout: batch 1 of the validators \(validator-1, validator-2\) would take 35 of network net-a's voting power 100 offline at once \(35\.0%: validator-1 20, validator-2 15\), more than rollout\.maxOfflinePower \(30%\)/);
        assert.match(refused[0]!, /Lower rollout\.roles\.validator\.batchSize, or raise rollout\.maxOfflinePower/);
        assert.deepEqual(powerViolations(plan(1), p, 30), [], "one at a time: 20, 15 and 10 of 100");
        assert.deepEqual(powerViolations(plan(3), p, 45), [], "45 of 100 is allowed at 45%");
        assert.equal(powerViolations(plan(3), p, 44).length, 1, "and not at 44%");
    });

    it("counts each network apart, and a validator of unknown power as none", () => {
        const p = power({ "validator-1": ["net-a", 25], "validator-2": ["net-b", 25] }, 100);
        assert.deepEqual(powerViolations(plan(3), p, 30), [], "25 of net-a and 25 of net-b: each within 30%");
        const alone = powerViolations(plan(1), power({ "validator-1": ["net-a", 80] }, 100), 30);
        assert.match(alone[0]!, /^rollout: validator-1 alone would take 80 of network net-a's voting power 100 offline at once \(80\.0%: validator-1 80\).* Raise rollout\.maxOfflinePower \(above 33% accepts that the network halts/);
        assert.deepEqual(powerViolations(plan(1), power({ "validator-1": ["net-a", 80] }, 100), 100), [], "100% accepts it");
    });

    it("maxOfflinePower is a percentage, 30% unless set", () => {
        assert.equal(rolloutSpec.parse({}).maxOfflinePower, "30%");
        for (const bad of ["0%", "101%", "30", 30, "33.3%"]) {
            const r = rolloutSpec.safeParse({ maxOfflinePower: bad });
            assert.equal(r.success, false, String(bad));
            assert.deepEqual(r.error!.issues[0]!.path, ["maxOfflinePower"]);
        }
    });
});

describe("voting power: the program", () => {
    let server: http.Server;
    let url = "";
    const set = new Map<string, bigint>();
    before(async () => {
        server = http.createServer((req, res) => {
            const u = new URL(req.url ?? "/", "http://x");
            const result =
                u.pathname === "/status"
                    ? { node_info: { network: "net-a" } }
                    : { block_height: "7", validators: [...set].map(([address, p]) => ({ address, voting_power: String(p) })), count: String(set.size), total: String(set.size) };
            res.setHeader("content-type", "application/json");
            res.end(JSON.stringify({ jsonrpc: "2.0", id: -1, result }));
        });
        await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
        url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    });
    after(() => server.close());

    /** Two validators of one network on two hosts, each with consensusRpcUrl, and a rollout. */
    function fleet(rollout: unknown, rpcUrl: unknown = url): any {
        const f = baseFleet();
        f.hosts["h-validator-2"] = existingHost("192.0.2.22");
        const v2 = validatorNode();
        Object.assign(v2, { name: "validator-2", host: "h-validator-2" });
        v2.validator.validatorKeySecret = "validatorKey2";
        f.nodes = [...f.nodes, v2];
        for (const n of f.nodes) if (n.role === "validator") n.validator.consensusRpcUrl = rpcUrl;
        f.rollout = rollout;
        return f;
    }
    const keys = { ...SECRETS, rpcSecret: "" };

    it("refuses the plan when a batch would take too much power offline, before any step, naming the figures", async () => {
        set.clear();
        set.set(validatorKeyAddress(SECRETS.validatorKey!)!, 20n);
        set.set(validatorKeyAddress(SECRETS.validatorKey2!)!, 20n);
        set.set(hex40(9), 60n);
        await assert.rejects(buildStack(fleet({ roles: { validator: { batchSize: 2 } } }), keys), /batch 1 of the validators \(validator-1, validator-2\) would take 40 of network net-a's voting power 100 offline at once \(40\.0%/);
        const { recorded } = await buildStack(fleet({ roles: { validator: { batchSize: 1 } } }), keys);
        assert.ok(recorded.some((r) => r.name === "fleet-validator-2-gate"), "one at a time: planned");
    });

    it("a validator without consensusRpcUrl is warned of, and counts as a node only", async () => {
        const f = fleet({ roles: { validator: { batchSize: 2 } } });
        delete f.nodes[3].validator.consensusRpcUrl;
        set.clear();
        set.set(validatorKeyAddress(SECRETS.validatorKey!)!, 40n);
        set.set(hex40(9), 60n);
        const warnings: string[] = [];
        const original = pulumi.log.warn;
        pulumi.log.warn = async (message: string) => void warnings.push(message);
        try {
            await assert.rejects(buildStack(f, keys), /validator-1 alone|batch 1 of the validators \(validator-1, validator-2\) would take 40 of network net-a's voting power 100/);
        } finally {
            pulumi.log.warn = original;
        }
        assert.deepEqual(warnings, ["rollout: voting power not known (no consensusRpcUrl): validator-2; batches count it as a node only"]);
    });

    it("an RPC that cannot be read stops the plan, named by the config path; a secret URL is never echoed", async () => {
        const down = "http://127.0.0.1:9/";
        await assert.rejects(buildStack(fleet({}, down), keys), /nodes\[2\]\.validator\.consensusRpcUrl \(http:\/\/127\.0\.0\.1:9\/\): the network's validator set cannot be read, so the rollout cannot keep its voting power online: \/status: no answer/);
        await assert.rejects(buildStack(fleet({}, { secret: "rpcSecret" }), { ...keys, rpcSecret: "http://user:hunter2@127.0.0.1:9/" }), (e: unknown) => {
            const message = String(e);
            assert.match(message, /nodes\[2\]\.validator\.consensusRpcUrl\.secret: the network's validator set cannot be read/);
            assert.doesNotMatch(message, /hunter2|127\.0\.0\.1:9/);
            return true;
        });
    });
});
