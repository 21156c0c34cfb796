// The README's example config is a config nodefleet takes: its YAML block, with the placeholders
// it shows (`…`, `<128 hex>`) filled with shaped test values, passes parseFleet. What this cannot
// show: that the hosts it names exist (the e2e tier brings the dev stack's up).
import { describe, it } from "node:test";
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { parse } from "yaml";
import { configIssues, FAKE_SSH_KEY, HOST_KEY, NODE_ID, SECRETS, SEQUENCER_KEY_ADDRESS, ADDR } from "../support/fixtures";
import { ROOT } from "../support/cli";

const README = fs.readFileSync(path.join(ROOT, "README.md"), "utf8");

describe("the README", () => {
    it("stays short enough to read in five minutes: at most 12,000 bytes", () => {
        assert.ok(Buffer.byteLength(README) <= 12_000, `README.md is ${Buffer.byteLength(README)} bytes`);
    });

    it("its example config, placeholders filled, is one nodefleet takes", () => {
        const block = /```yaml\n([\s\S]*?)```/.exec(README);
        assert.ok(block, "a yaml block");
        const filled = block[1]!
            .replace("ssh-ed25519 AAAA…", HOST_KEY)
            .replace("<128 hex>", NODE_ID)
            .replace(/sha256: 4f…/g, `sha256: ${"4f".repeat(32)}`)
            .replace("<address of sequencerKey>", SEQUENCER_KEY_ADDRESS)
            .replace(/0x…/g, ADDR.a);
        assert.doesNotMatch(filled.replace(/\s#\s.*$/gm, ""), /…|<[a-z0-9 ]+>/, "every placeholder filled");
        const fleet = parse(filled).config["nodefleet:fleet"];
        const secrets = { opsSshKey: FAKE_SSH_KEY, minerKey: SECRETS.minerKey!, sequencerKey: SECRETS.sequencerKey!, validatorKey: SECRETS.validatorKey!, sequencerBlsKey: SECRETS.blsKey!, paidRpcUrl: "https://rpc.example.org/v2/KEY", sepoliaRpc: "https://sepolia.example.org/v2/KEY", sepoliaBeacon: "https://beacon.example.org/v2/KEY" };
        assert.deepEqual(configIssues(fleet, secrets), []);
    });
});
