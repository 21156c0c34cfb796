// The policy pack's test fixture: one existing host and one validator, registered as nodefleet
// registers them (component types, step names, scripts on stdin, dependsOn), with config
// `policyfixture:case` breaking one rule. The real program cannot produce most of these: its
// config checks stop them first, which is why the pack is tested on this fixture too.
import * as pulumi from "@pulumi/pulumi";
import * as command from "@pulumi/command";

const config = new pulumi.Config();
const kase = config.require("case");
const KEY = "4f".repeat(32);
const OTHER_KEY = "5e".repeat(32);
const HOST_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl";

const connection = (host: string) => ({ host, port: 22, user: "root", privateKey: pulumi.secret("not-a-key"), ...(kase === "unpinned" ? {} : { hostKey: HOST_KEY }) });
const step = (name: string, host: string, script: pulumi.Input<string>, parent: pulumi.Resource, dependsOn: pulumi.Resource[] = [], extra: Partial<command.remote.CommandArgs> = {}) =>
    new command.remote.Command(name, { connection: connection(host), create: "/bin/sh -s", stdin: script, ...extra }, { parent, dependsOn });

class Component extends pulumi.ComponentResource {
    constructor(type: string, name: string) {
        super(type, name, {}, {});
    }
}

function existingHost(name: string, address: string) {
    const host = new Component("nodefleet:host:ExistingHost", `fleet-${name}`);
    const cores = kase === "hardware" ? 4 : 8;
    const preflight = step(`fleet-${name}-preflight`, address, `mode='enforce'\nwant_cores=${cores}\nwant_mem_gb=32\nwant_disk_gb=1000\nwant_ssd=1\n`, host);
    const world = kase === "rpc-open" ? "tcp dport 56545 accept comment \"oops\"\n" : kase === "metrics-open" ? "tcp dport 9100 accept comment \"node_exporter\"\n" : "ip saddr { 192.0.2.10/32 } tcp dport 9100 accept comment \"node_exporter, for the monitoring host\"\n";
    const ssh = kase === "ssh-open" ? "tcp dport 22 accept comment \"SSH\"\n" : "ip saddr { 192.0.2.0/24 } tcp dport 22 accept comment \"SSH from admin CIDRs\"\n";
    const nft = `#!/bin/sh\ncat > /etc/nodefleet/firewall/nodefleet.nft <<'EOF'\ntable inet nodefleet {\n chain input {\n${ssh}tcp dport 56303 accept comment "execution p2p"\nudp dport 56303 accept comment "execution p2p"\n${world} }\n}\nEOF\n`;
    const apply = step(`fleet-${name}-firewall-apply`, address, nft, host, [preflight]);
    const release = step(`fleet-${name}-release-0g-chain`, address, "echo release", host, [apply]);
    return { release };
}

function validator(name: string, address: string, after: pulumi.Resource, key: string) {
    const node = new Component("nodefleet:role:ValidatorNode", `fleet-${name}`);
    const priv = Buffer.from(key + key, "hex").toString("base64");
    const keyJson = `{"priv_key": {"type": "tendermint/PrivKeyEd25519", "value": "${priv}"}}`;
    const keyStep = step(`fleet-${name}-validator-key`, address, pulumi.secret(`cat > key <<'EOF'\n${keyJson}\nEOF\n`), node, [after]);
    const configure = step(`fleet-${name}-configure`, address, "echo configure", node, [keyStep], kase === "key-plain" ? { environment: { VALIDATOR_KEY: priv } } : {});
    const s04 = step(`fleet-${name}-switch-s04-backup`, address, "echo s04", node, [configure]);
    const s05 = step(`fleet-${name}-switch-s05-export`, address, "echo s05", node, [s04]);
    step(`fleet-${name}-switch-s06-delete-geth`, address, "echo s06", node, kase === "guard-order" ? [s04] : [s05]);
}

const dev = existingHost("dev-2", "10.77.0.12");
validator("validator-1", "10.77.0.12", dev.release, KEY);
if (kase === "same-key" || kase === "two-validators") {
    const second = existingHost("dev-3", "10.77.0.13");
    validator("validator-2", "10.77.0.13", second.release, kase === "same-key" ? KEY : OTHER_KEY);
}
