// The validator role's execution-client units: golden copies checked by systemd-analyze verify,
// and reth's command line compared flag by flag with seed 2.6. (The steps of the switch that
// install them are not built yet; the VM tier will prove them.)
import { describe, it } from "node:test";
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import { parseFleet } from "../../components/config/fleet";
import { renderGethUnit, renderRethUnit, validatorPaths } from "../../components/roles/validator";
import { golden, verifyUnits } from "../support/golden";
import { baseFleet, ENODE, secretSource } from "../support/fixtures";

const V = 2;

function validatorSpec() {
    const fleet = parseFleet(baseFleet(), secretSource());
    return fleet.spec.nodes[V] as Extract<(typeof fleet.spec.nodes)[number], { role: "validator" }>;
}

/** ExecStart's words as flag -> value ("" for a switch), after the program and subcommand. */
function flags(unit: string): Map<string, string> {
    const words = unit.split("\n").find((l) => l.startsWith("ExecStart="))!.slice("ExecStart=".length).split(" ");
    const out = new Map<string, string>();
    for (let i = 1; i < words.length; i++) {
        const w = words[i]!;
        if (!w.startsWith("--")) continue;
        const next = words[i + 1];
        out.set(w, next !== undefined && !next.startsWith("--") ? next : "");
    }
    return out;
}

describe("validator role: execution-client units", () => {
    it("reth's unit carries exactly seed 2.6's parameters and unit settings", () => {
        const node = validatorSpec();
        const unit = fs.readFileSync(golden("validator/reth-validator-1.service", renderRethUnit(node, "/data", "0g-chain", "198.51.100.30")), "utf8");
        verifyUnits({ "reth-validator-1.service": unit });
        assert.match(unit, /^ExecStart=\/opt\/nodefleet\/0g-chain\/bin\/reth node /m);
        assert.deepEqual(Object.fromEntries(flags(unit)), {
            "--chain": "/opt/nodefleet/0g-chain/geth-genesis.json",
            "--datadir": "/data/validator-1/reth",
            "--ipcpath": "/data/validator-1/reth/reth.ipc",
            "--http": "", "--http.addr": "127.0.0.1", "--http.port": "56545", "--http.api": "eth,net,admin",
            "--ws": "", "--ws.addr": "127.0.0.1", "--ws.port": "56546",
            "--authrpc.addr": "127.0.0.1", "--authrpc.port": "56551", "--authrpc.jwtsecret": "/data/validator-1/jwt.hex",
            "--engine.persistence-threshold": "0", "--engine.memory-block-buffer-target": "0",
            "--port": "56303",
            "--bootnodes": ENODE,
            "--nat": "extip:198.51.100.30",
        });
        for (const line of ["User=nodefleet", "Group=nodefleet", "WorkingDirectory=/data/validator-1", "Restart=always", "RestartSec=3", "LimitNOFILE=65535", "After=network-online.target", "Wants=network-online.target", "WantedBy=multi-user.target"]) {
            assert.match(unit, new RegExp(`^${line}$`, "m"), line);
        }
    });

    it("geth's unit uses the same ports, bind addresses and JWT file, and passes systemd-analyze verify", () => {
        const node = validatorSpec();
        const geth = flags(fs.readFileSync(golden("validator/geth-validator-1.service", renderGethUnit(node, "/data", "0g-chain", "198.51.100.30")), "utf8"));
        const reth = flags(renderRethUnit(node, "/data", "0g-chain", "198.51.100.30"));
        verifyUnits({ "geth-validator-1.service": renderGethUnit(node, "/data", "0g-chain", "198.51.100.30") });
        for (const f of ["--http.addr", "--http.port", "--ws.addr", "--ws.port", "--authrpc.addr", "--authrpc.port", "--authrpc.jwtsecret", "--port", "--bootnodes", "--nat"]) {
            assert.equal(geth.get(f), reth.get(f), f);
        }
        assert.equal(geth.get("--datadir"), validatorPaths(node, "/data").gethDir);
        assert.equal(geth.get("--networkid"), "16661");
    });
});
