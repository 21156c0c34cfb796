// HostDrift's provider without an engine: what a refresh's drift lines become on the next up (the
// repair counts that its groups' steps carry in their triggers). Its read (SSH to a host, the check
// on stdin) runs on the dev VMs (test/e2e/dev-stack.test.ts) and against the scripted host
// (test/cli/pipeline.test.ts); what the check reads is tested in hostfiles/tests/test_drift.py.
import { describe, it } from "node:test";
import * as assert from "node:assert/strict";
import { driftRecord } from "../../components/hosts/drift";
import { cleanDriftItem, driftLine, driftLineGroup, driftProvider } from "../../components/hosts/drift-check";

const conn = { host: "192.0.2.10", port: 22, user: "root", privateKey: "k" };
const props = (drift: string[], repairs: Record<string, number> = {}) => ({ host: "dev-1", connection: conn, toolHash: "t", drift, repairs });

describe("drift: HostDrift's provider", () => {
    it("a drift line names host, item and change, and ends in its group", () => {
        const line = driftLine("dev-1", { group: "storage-1.configure", item: "/data/storage-1/run/config.toml", change: "content changed" });
        assert.equal(line, "dev-1: /data/storage-1/run/config.toml: content changed [storage-1.configure]");
        assert.equal(driftLineGroup(line), "storage-1.configure");
        assert.equal(driftLineGroup("no group here"), undefined);
    });

    it("no drift, same host and check: no change (a no-op up stays a no-op)", async () => {
        assert.deepEqual(await driftProvider.diff!("drift-dev-1", props([]), props([])), { changes: false });
    });

    it("a refresh that found drift makes the next up count one repair per drifted group, then clears it", async () => {
        const olds = props([
            "dev-1: /data/storage-1/run/config.toml: content changed [storage-1.configure]",
            "dev-1: unit zgs-storage-1.service: not running (inactive) [storage-1.configure]",
            "dev-1: nftables table inet nodefleet: missing (the firewall is not loaded) [firewall]",
        ], { firewall: 2, "release.zgs": 1 });
        assert.deepEqual(await driftProvider.diff!("drift-dev-1", olds, props([])), { changes: true });
        const out = await driftProvider.update!("drift-dev-1", olds, props([]));
        assert.deepEqual(out!.outs.drift, []);
        assert.deepEqual(out!.outs.repairs, { firewall: 3, "release.zgs": 1, "storage-1.configure": 1 });
    });

    it("a new connection or a new check is an update that repairs nothing", async () => {
        const moved = { ...props([]), connection: { ...conn, host: "192.0.2.11" } };
        assert.deepEqual(await driftProvider.diff!("drift-dev-1", props([], { firewall: 1 }), moved), { changes: true });
        assert.deepEqual(await driftProvider.diff!("drift-dev-1", props([]), { ...props([]), toolHash: "u" }), { changes: true });
        assert.deepEqual((await driftProvider.update!("drift-dev-1", props([], { firewall: 1 }), moved))!.outs.repairs, { firewall: 1 });
    });

    it("a state with the provider's whole code is rewritten; another loader's text is no change (a preview would show the steps bound to it replaced)", async () => {
        const withText = (text: string) => ({ ...props([]), __provider: text });
        assert.deepEqual(await driftProvider.diff!("drift-dev-1", withText("exports.handler = __f0; /* 14 KB of the check itself */"), props([])), { changes: true });
        assert.deepEqual(await driftProvider.diff!("drift-dev-1", withText('loaded = require(path.resolve("components/hosts/drift-check"))'), withText("another loader's text, components/hosts/drift-check")), { changes: false });
    });

    it("creates with nothing read (the steps after it record the host) and no repairs", async () => {
        const made = await driftProvider.create({ host: "dev-1", connection: conn, toolHash: "t" });
        assert.deepEqual([made.id, made.outs.drift, made.outs.repairs], ["drift-dev-1", [], {}]);
    });

    it("what a host answers is made safe to show: printable, no quote or newline, bounded, a group's name or 'unknown'", () => {
        assert.deepEqual(cleanDriftItem({ group: "storage-1.configure", item: "/etc/x", change: "content changed" }), { group: "storage-1.configure", item: "/etc/x", change: "content changed" });
        const hostile = cleanDriftItem({ group: "x] [firewall", item: 'a"\n::error::b', change: "y".repeat(1000) });
        assert.deepEqual([hostile.group, hostile.item, hostile.change.length], ["unknown", "a??::error::b", 300]);
        assert.deepEqual(cleanDriftItem("not an object"), { group: "unknown", item: "", change: "" });
        // A drift line of it still ends in its group, the only one.
        assert.equal(driftLineGroup(driftLine("dev-1", hostile)), "unknown");
    });

    it("a group is a plain name: a record directory never leaves the drift directory", () => {
        assert.equal(driftRecord("release.0g-chain"), "/var/lib/nodefleet/drift/release.0g-chain");
        for (const bad of ["../etc", "a/b", "", "x y", "$(id)"]) assert.throws(() => driftRecord(bad), /drift group/);
    });
});
