// Address math (components/base/cidr.ts): what "open to the world" means for the config checks and the
// policy pack alike.
import { describe, it } from "node:test";
import * as assert from "node:assert/strict";
import { addressKey, coversWorld, parseAddress, parseCidr, worldFamilies } from "../../components/base/cidr";

describe("address math", () => {
    it("parses IPv4 and every IPv6 notation to the same numbers", () => {
        assert.deepEqual(parseAddress("10.1.2.3"), { family: 4, value: 0x0a010203n });
        for (const same of ["::1", "0::1", "0:0:0:0:0:0:0:1", "0000:0000::0001"]) assert.deepEqual(parseAddress(same), { family: 6, value: 1n }, same);
        assert.deepEqual(parseAddress("::ffff:10.1.2.3"), { family: 6, value: (0xffffn << 32n) | 0x0a010203n });
        assert.deepEqual(parseAddress("2001:DB8::"), parseAddress("2001:db8::"));
        for (const bad of ["010.1.2.3", "1.2.3", "1.2.3.4.5", "::g", "fe80::1%eth0", "", "1::2::3"]) assert.equal(parseAddress(bad), undefined, bad);
    });

    it("parses CIDRs, refusing host bits, long prefixes and padded lengths", () => {
        assert.deepEqual(parseCidr("10.0.0.0/8"), { range: { family: 4, first: 0x0a000000n, last: 0x0affffffn }, prefix: 8 });
        assert.match((parseCidr("10.0.0.1/8") as { reason: string }).reason, /host bits are set/);
        assert.match((parseCidr("2001:db8::1/64") as { reason: string }).reason, /host bits are set/);
        assert.match((parseCidr("10.0.0.0/33") as { reason: string }).reason, /IPv4 prefix length must be 0-32/);
        assert.match((parseCidr("::/129") as { reason: string }).reason, /IPv6 prefix length must be 0-128/);
        assert.match((parseCidr("0.0.0.0/00") as { reason: string }).reason, /without leading zeros/);
    });

    it("finds the whole internet in any spelling or split, and nothing less", () => {
        for (const world of [["0.0.0.0/0"], ["::/0"], ["0::0/0"], ["0:0:0:0:0:0:0:0/0"], ["0.0.0.0/1", "128.0.0.0/1"], ["128.0.0.0/2", "0.0.0.0/1", "192.0.0.0/2"], ["::/1", "8000::/1"], ["::ffff:0.0.0.0/96"]]) {
            assert.equal(coversWorld(world), true, world.join(","));
        }
        for (const notWorld of [["0.0.0.0/1"], ["0.0.0.0/1", "128.0.0.0/2"], ["10.0.0.0/8", "2001:db8::/32"], ["0.0.0.1/32"], [], ["not a cidr"], ["::ffff:0.0.0.0/97"]]) {
            assert.equal(coversWorld(notWorld), false, notWorld.join(","));
        }
        assert.deepEqual(worldFamilies(["::/0"]), [4, 6], "::/0 holds every IPv4-mapped address too");
        assert.deepEqual(worldFamilies(["::ffff:0.0.0.0/97", "::ffff:128.0.0.0/97"]), [4]);
    });

    it("knows one machine by its parsed address", () => {
        assert.equal(addressKey("::ffff:192.0.2.10"), addressKey("192.0.2.10"));
        assert.equal(addressKey("0::1"), addressKey("::1"));
        assert.equal(addressKey("Node-1.Example.org."), addressKey("node-1.example.org"));
        assert.notEqual(addressKey("192.0.2.10"), addressKey("192.0.2.11"));
    });
});
