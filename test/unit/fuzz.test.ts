// Property-based fuzzing of the config and of every file rendered from it (fast-check, seeded and
// bounded, so a run is repeatable and takes seconds). As an attacker who writes the config:
//  1. any string in any free-text, URL, address or name field is either refused with that field's
//     path and a reason (never its value, for fields naming a secret), or accepted;
//  2. a hostile URL that is accepted reaches each file it is rendered into as exactly one quoted
//     token: the real shell reads it back unchanged from the install script (and shellcheck and
//     `sh -n` pass), the sequencer unit passes `systemd-analyze verify`, the JSON settings the host
//     tools read parse back to the same value.
// What it cannot show: how the node software itself treats such a URL (that is the URL's owner's
// business once it arrives unchanged).
import { describe, it } from "node:test";
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as fc from "fast-check";
import { spawnSync } from "node:child_process";
import { parseFleet } from "../../components/config/fleet";
import { FleetConfigError } from "../../components/config/errors";
import { renderRelease, secretAssignments } from "../../components/hosts/scripts";
import { renderSequencerUnit } from "../../components/roles/sequencer/node";
import { validatorKeyScript, validatorSettingsJson } from "../../components/roles/validator/node";
import { aztecRelease, awsHost, baseFleet, chainRelease, hetznerHost, SECRETS, secretSource } from "../support/fixtures";
import { requireTool, runTool, verifyUnits } from "../support/golden";
const REL = chainRelease();

const SEED = 20261123;

/** Pieces an attacker strings together: shell, systemd, TOML and here-document syntax, line breaks. */
const HOSTILE_PIECES = ["'", '"', "$(id)", "`id`", ";", "&&", "|", "\n", "\r", "\t", "\u2028", "\u2029", "\u0000", "\u001b[31m", "\\", "%n", "$HOME", " ", "#", "NODEFLEET_EOF", "a", "-", "/", "=", "{", "}", "\u202e"];
const hostile = fc.oneof(
    fc.array(fc.constantFrom(...HOSTILE_PIECES), { minLength: 1, maxLength: 12 }).map((a) => a.join("")),
    fc.string({ unit: "binary", maxLength: 40 }),
    fc.string({ minLength: 3000, maxLength: 5000 }),
);

type Setter = (f: any, v: string) => void;
/** Every string field an operator types free-form or as an address, name, URL or path. */
const FIELDS: Record<string, Setter> = {
    "hosts.h-storage.address": (f, v) => (f.hosts["h-storage"].address = v),
    "hosts.h-storage.user": (f, v) => (f.hosts["h-storage"].user = v),
    "hosts.h-storage.hostKey": (f, v) => (f.hosts["h-storage"].hostKey = `${f.hosts["h-storage"].hostKey} ${v}`),
    "hosts.h-storage.dataMountPoint": (f, v) => (f.hosts["h-storage"].dataMountPoint = `/data${v}`),
    "hosts.h-storage.adminCidrs[0]": (f, v) => (f.hosts["h-storage"].adminCidrs = [`198.51.100.0/24${v}`]),
    "hosts.h-storage.sshPrivateKeySecret": (f, v) => (f.hosts["h-storage"].sshPrivateKeySecret = v),
    "nodes[0].name": (f, v) => (f.nodes[0].name = v),
    "nodes[0].host": (f, v) => (f.nodes[0].host = v),
    "nodes[0].storage.rpcEndpoints[0]": (f, v) => (f.nodes[0].storage.rpcEndpoints = [`https://rpc.example.org/${v}`]),
    "nodes[0].storage.networkBootNodes[0]": (f, v) => (f.nodes[0].storage.networkBootNodes = [`${f.nodes[0].storage.networkBootNodes[0]}${v}`]),
    "nodes[0].storage.minerKeySecret": (f, v) => (f.nodes[0].storage.minerKeySecret = v),
    "nodes[1].sequencer.l1RpcUrls[0]": (f, v) => (f.nodes[1].sequencer.l1RpcUrls = [`https://l1.example.org/${v}`]),
    "nodes[1].sequencer.coinbase": (f, v) => (f.nodes[1].sequencer.coinbase = `${f.nodes[1].sequencer.coinbase}${v}`),
    "nodes[1].sequencer.publicIp": (f, v) => (f.nodes[1].sequencer.publicIp = `203.0.113.9${v}`),
    "nodes[1].sequencer.version": (f, v) => (f.nodes[1].sequencer.version = `2.0.2${v}`),
    "nodes[2].validator.bootnode": (f, v) => (f.nodes[2].validator.bootnode = `${f.nodes[2].validator.bootnode}${v}`),
    "nodes[2].validator.referenceRpcUrl": (f, v) => (f.nodes[2].validator.referenceRpcUrl = `https://evmrpc.example.org/${v}`),
    "releases.zgs.url": (f, v) => (f.releases.zgs.url = `https://example.org/dl/${v}`),
    "releases.zgs.sha256File": (f, v) => { delete f.releases.zgs.sha256; f.releases.zgs.sha256File = v; },
};

function parse(fleet: unknown): { ok: true; spec: any } | { ok: false; issues: readonly string[] } {
    try {
        return { ok: true, spec: parseFleet(fleet, secretSource(SECRETS)).spec };
    } catch (e) {
        assert.ok(e instanceof FleetConfigError, `not a config error: ${String(e)}`);
        return { ok: false, issues: e.issues };
    }
}

/** The fixture fleets: existing hosts only, and one with a Hetzner and an AWS host. */
const FLEETS: Record<string, () => any> = {
    existing: baseFleet,
    cloud: () => {
        const f = baseFleet();
        f.hosts["h-storage"] = hetznerHost();
        f.hosts["h-validator"] = awsHost();
        return f;
    },
};

/** Every string in a config, by path: what an operator can type. */
function stringLeaves(x: unknown, at: (string | number)[] = []): (string | number)[][] {
    if (typeof x === "string") return [at];
    if (Array.isArray(x)) return x.flatMap((v, i) => stringLeaves(v, [...at, i]));
    if (x && typeof x === "object") return Object.entries(x).flatMap(([k, v]) => stringLeaves(v, [...at, k]));
    return [];
}

const pathText = (p: readonly (string | number)[]) => p.map((k) => (typeof k === "number" ? `[${k}]` : `.${k}`)).join("").slice(1).replace(/\.\[/g, "[");

function setAt(f: any, p: readonly (string | number)[], v: string): void {
    let o = f;
    for (const k of p.slice(0, -1)) o = o[k];
    o[p[p.length - 1]!] = v;
}

describe("fuzzing the config and the rendered files", () => {
    for (const [kind, make] of Object.entries(FLEETS)) {
        it(`every string field of the ${kind} fixture (${stringLeaves(make()).length} fields): a hostile value is refused at its path, or accepted`, () => {
            for (const leaf of stringLeaves(make())) {
                const field = pathText(leaf);
                fc.assert(
                    fc.property(hostile, (v) => {
                        const fleet = make();
                        setAt(fleet, leaf, v);
                        const r = parse(fleet);
                        if (r.ok) return;
                        // At the field itself, or at the entry it sits in (a host, a node, a release).
                        const owner = field.split(".").slice(0, 2).join(".");
                        assert.ok(r.issues.some((i) => i.startsWith(field) || i.startsWith(owner) || i.startsWith(field.replace(/\[\d+\]$/, ""))), `${field} = ${JSON.stringify(v)}:\n${r.issues.join("\n")}`);
                        if (/Secret$/.test(field) && v.length >= 6) assert.ok(!r.issues.join("\n").includes(v), `${field}: a …Secret field's value is never shown`);
                    }),
                    { seed: SEED, numRuns: 40 },
                );
            }
        });
    }

    for (const [field, set] of Object.entries(FIELDS)) {
        it(`${field}: hostile values are refused at that path, or accepted`, () => {
            fc.assert(
                fc.property(hostile, (v) => {
                    const fleet = baseFleet();
                    set(fleet, v);
                    const r = parse(fleet);
                    if (r.ok) return;
                    // The field's own path, or the map key / record it sits under.
                    const base = field.replace(/\[\d+\]$/, "");
                    assert.ok(r.issues.some((i) => i.startsWith(field) || i.startsWith(`${base}:`) || i.startsWith(base.split(".").slice(0, 2).join("."))), `${JSON.stringify(v)}:\n${r.issues.join("\n")}`);
                    assert.ok(r.issues.every((i) => /: .+/.test(i)), "each issue has a reason");
                    if (/Secret$/.test(field) && v.length >= 6) assert.ok(!r.issues.join("\n").includes(v), "a …Secret field's value is never shown");
                }),
                { seed: SEED, numRuns: 150 },
            );
        });
    }

    it("every string with a control or line-separator character is refused, whatever the field", () => {
        const breaking = fc.tuple(fc.string({ maxLength: 10 }), fc.constantFrom("\n", "\r", "\t", "\u0000", "\u007f", "\u0085", "\u2028", "\u2029", "\u001b"), fc.string({ maxLength: 10 }));
        fc.assert(
            fc.property(fc.constantFrom(...Object.keys(FIELDS)), breaking, (field, [a, c, b]) => {
                const fleet = baseFleet();
                FIELDS[field]!(fleet, `${a}${c}${b}`);
                const r = parse(fleet);
                assert.equal(r.ok, false, `${field} accepted ${JSON.stringify(`${a}${c}${b}`)}`);
            }),
            { seed: SEED, numRuns: 300 },
        );
    });

    /** URL paths with shell, systemd and JSON syntax that the URL parser keeps as they are. */
    const urlPath = fc.array(fc.constantFrom("'", "$(id)", "`id`", ";", "&", "!", "*", "(", ")", ",", "=", "%25n", "a", "b", "~", "@", ":", "$", "%27", "+"), { minLength: 1, maxLength: 10 }).map((a) => a.join(""));

    it("an accepted hostile release URL is one literal word of the install script (sh reads it back unchanged)", () => {
        requireTool("shellcheck", "shellcheck");
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "nodefleet-fuzz-"));
        let accepted = 0;
        fc.assert(
            fc.property(urlPath, (p) => {
                const fleet = baseFleet();
                fleet.releases.zgs.url = `https://example.org/dl/${p}`;
                const r = parse(fleet);
                if (!r.ok) return;
                accepted++;
                const url = r.spec.releases.zgs.url as string;
                const { install } = renderRelease("h-storage", { name: "zgs", url, sha256: "ab".repeat(32) });
                const file = path.join(dir, "install.sh");
                fs.writeFileSync(file, install);
                assert.equal(runTool("sh", ["-n", file]).status, 0);
                const check = runTool("shellcheck", ["--shell=sh", "--severity=warning", file]);
                assert.equal(check.status, 0, check.output);
                // Run the script's own assignments (the lines before the first blank line) and print $url.
                const assignments = install.split("\n\n")[0]!;
                const back = runTool("sh", ["-c", `${assignments}\nprintf %s "$url"`]);
                assert.equal(back.output, url);
            }),
            { seed: SEED, numRuns: 60 },
        );
        fs.rmSync(dir, { recursive: true, force: true });
        assert.ok(accepted > 20, `only ${accepted} hostile URLs were accepted: the property tested little`);
    });

    it("an accepted hostile L1 URL leaves the sequencer unit valid for systemd", () => {
        fc.assert(
            fc.property(urlPath, (p) => {
                const fleet = baseFleet();
                fleet.nodes[1].sequencer.l1RpcUrls = [`https://l1.example.org/${p}`];
                const r = parse(fleet);
                if (!r.ok) return;
                const node = r.spec.nodes[1];
                const unit = renderSequencerUnit(node, "/data", aztecRelease(), "203.0.113.9");
                assert.equal(unit.split("\n").filter((l: string) => l.startsWith("ExecStart=")).length, 1, "one ExecStart line");
                verifyUnits({ "aztec-sequencer-1.service": unit }, /docker|aztec/);
            }),
            { seed: SEED, numRuns: 15 },
        );
    });

    it("an accepted hostile reference URL reaches the key step's root-only URL file unchanged (and no other file)", () => {
        fc.assert(
            fc.property(urlPath, (p) => {
                const fleet = baseFleet();
                fleet.nodes[2].validator.referenceRpcUrl = `https://evmrpc.example.org/${p}`;
                const r = parse(fleet);
                if (!r.ok) return;
                const url = r.spec.nodes[2].validator.referenceRpcUrl as string;
                const { body, secrets } = validatorKeyScript(r.spec.nodes[2] as any, "/data", SECRETS.validatorKey!, url);
                assert.ok(!body.includes("evmrpc.example.org"), "the bundled body holds no URL");
                const heredoc = "<<NODEFLEET_EOF\n$nodefleet_secret_urls\nNODEFLEET_EOF\n";
                assert.ok(body.includes(`put /etc/nodefleet/validator-1/urls.json 0600 root:root ${heredoc}`), "the key step writes the URL file");
                // What the shell writes: the assignment the stdin carries, expanded by that here-document.
                const written = spawnSync("sh", ["-s"], { input: `${secretAssignments(secrets)}cat ${heredoc}`, encoding: "utf8" });
                assert.equal(written.status, 0, written.stderr);
                assert.equal(written.stdout, secrets.urls);
                assert.equal(JSON.parse(written.stdout).referenceRpcUrl, url);
                assert.ok(!validatorSettingsJson(r.spec.nodes[2], "/data", REL).includes("evmrpc.example.org"));
            }),
            { seed: SEED, numRuns: 100 },
        );
    });
});
