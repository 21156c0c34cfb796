// Strict Pulumi mocks: a resource type or provider function this file does not know
// fails the test. What mocks cannot prove: that any remote command works on a host,
// that AWS or Hetzner accept these inputs (the mocks took two inputs the real hcloud provider
// warns about: test/cli/hetzner-preview.test.ts), or ordering enforced by the engine. The
// dependsOn chains are read from the resource options (a transformation records them).
import * as fs from "node:fs";
import * as path from "node:path";
import * as pulumi from "@pulumi/pulumi";
import { runnerDigest } from "../../components/hosts/tools";
import { newHostKey } from "../../components/hosts/host-key-provider";

export interface Recorded {
    /** A custom resource (a step, a cloud resource), not a component. */
    readonly custom: boolean;
    readonly type: string;
    readonly name: string;
    readonly parent: string | undefined;
    readonly dependsOn: string[];
    readonly protect: boolean;
    readonly ignoreChanges: string[];
    readonly additionalSecretOutputs: string[];
    /** The plugin version the resource option asks for (explicit providers). */
    readonly version: string | undefined;
    readonly props: Record<string, unknown>;
    readonly resource: pulumi.Resource;
}

export interface Registered {
    readonly custom: boolean;
    readonly type: string;
    readonly name: string;
    readonly inputs: any;
    /** The provider reference the engine was given (`urn::id`), for a custom resource with an explicit provider. */
    readonly provider: string | undefined;
    /** Input paths that arrived as secrets. */
    readonly secretPaths: string[];
    /** A copy step's source archive: its directory, once the engine has read it. */
    archivePath?: string;
}

const KNOWN_TYPES = new Set([
    "aws:ec2/securityGroup:SecurityGroup",
    "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule",
    "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule",
    "aws:ec2/instance:Instance",
    "aws:ebs/volume:Volume",
    "aws:ec2/volumeAttachment:VolumeAttachment",
    "aws:ec2/eip:Eip",
    "hcloud:index/firewall:Firewall",
    "hcloud:index/primaryIp:PrimaryIp",
    "hcloud:index/server:Server",
    "hcloud:index/volume:Volume",
    "hcloud:index/volumeAttachment:VolumeAttachment",
    "command:remote:Command",
    "command:remote:CopyToRemote",
    "nodefleet:fleet:Fleet",
    "nodefleet:host:AwsHost",
    "nodefleet:host:HetznerHost",
    "nodefleet:host:ExistingHost",
    "nodefleet:role:StorageNode",
    "nodefleet:role:SequencerNode",
    "nodefleet:role:ValidatorNode",
    "nodefleet:rollout:Gate",
    "nodefleet:monitoring:Agent",
    "nodefleet:monitoring:Server",
    "pulumi:pulumi:StackReference",
    "pulumi:providers:hcloud",
    "pulumi-nodejs:dynamic:Resource",
    "pulumi:providers:pulumi-nodejs",
]);

/** What this stack's own outputs were after the "last up" (read by previousValidatorHosts through a stack reference). */
export const previousStackOutputs: Record<string, unknown> = {};

export const registered: Registered[] = [];
export const calls: { token: string; inputs: any }[] = [];

let nextNumericId = 1000;

/** The key a mocked cloud host says it made (an ed25519 public key: the program checks its form). */
export const MADE_HOST_KEY = newHostKey("made-by-the-host").publicKey;

function outputsFor(type: string, name: string, inputs: any): { id: string; state: any } {
    switch (type) {
        case "aws:ec2/instance:Instance":
            return { id: "i-0123456789abcdef0", state: { ...inputs, availabilityZone: inputs.availabilityZone ?? "eu-central-1a", privateIp: "10.0.1.10" } };
        case "aws:ebs/volume:Volume":
            return { id: "vol-0123456789abcdef0", state: inputs };
        case "aws:ec2/eip:Eip":
            return { id: "eipalloc-0123", state: { ...inputs, publicIp: "203.0.113.50" } };
        case "hcloud:index/primaryIp:PrimaryIp":
            return { id: String(nextNumericId++), state: { ...inputs, ipAddress: "203.0.113.60" } };
        case "command:remote:Command":
            // A cloud host's key step answers the key the host made (first-boot.ts), as a host does.
            return { id: `${name}-id`, state: { ...inputs, stdout: name.endsWith("-host-key") ? `{"hostKey":"${MADE_HOST_KEY}"}\n` : "", stderr: "" } };
        case "pulumi-nodejs:dynamic:Resource":
            // A first-boot key as its provider makes it (a real key); the swap and HostDrift as their
            // create leaves them (the mocks run no SSH: the swap's and the drift check's provider
            // code is tested on its own and on the lab's hosts).
            if (name.endsWith("-first-boot-key")) return { id: `first-boot-key-${inputs.host}`, state: { ...inputs, ...newHostKey(`nodefleet-first-boot-${inputs.host}`) } };
            if (name.endsWith("-host-key-swap")) return { id: `host-key-swap-${inputs.host}`, state: inputs };
            return { id: `drift-${inputs.host}`, state: { ...inputs, drift: [], repairs: {} } };
        case "pulumi:pulumi:StackReference":
            return { id: inputs.name, state: { ...inputs, outputs: { ...previousStackOutputs }, secretOutputNames: [] } };
        default:
            return { id: type.startsWith("hcloud:") ? String(nextNumericId++) : `${name}-id`, state: inputs };
    }
}

const SECRET_SIG = "4dabf18193072939515e22adb298388d";

/** Strip the engine's secret envelopes so tests read plain inputs; `secretPaths` keeps where they were. */
function unwrapSecrets(x: any, path: string, secretPaths: string[]): any {
    if (Array.isArray(x)) return x.map((v, i) => unwrapSecrets(v, `${path}[${i}]`, secretPaths));
    if (x && typeof x === "object") {
        if (x[SECRET_SIG] !== undefined && "value" in x) {
            secretPaths.push(path);
            return unwrapSecrets(x.value, path, secretPaths);
        }
        return Object.fromEntries(Object.entries(x).map(([k, v]) => [k, unwrapSecrets(v, path ? `${path}.${k}` : k, secretPaths)]));
    }
    return x;
}

export function installMocks(): void {
    registered.length = 0;
    calls.length = 0;
    pulumi.runtime.setMocks(
        {
            newResource(args) {
                if (!KNOWN_TYPES.has(args.type)) throw new Error(`strict mocks: unexpected resource type ${args.type} (${args.name})`);
                const secretPaths: string[] = [];
                const inputs = unwrapSecrets(args.inputs, "", secretPaths);
                const entry: Registered = { custom: args.custom === true, type: args.type, name: args.name, inputs, provider: args.provider, secretPaths };
                registered.push(entry);
                const result = outputsFor(args.type, args.name, args.inputs);
                // An archive arrives with its path as a promise: resolved before the resource is.
                const archive = (args.inputs.source as { path?: Promise<string> } | undefined)?.path;
                if (archive === undefined) return result;
                return archive.then((p) => {
                    entry.archivePath = String(p);
                    return result;
                });
            },
            call(args) {
                calls.push({ token: args.token, inputs: args.inputs });
                switch (args.token) {
                    case "aws:ec2/getAmi:getAmi":
                        return { id: "ami-0a1b2c3d4e5f60718", name: "debian-12-amd64-20261101" };
                    case "aws:ec2/getVpc:getVpc":
                        return { id: "vpc-0a1b2c3d" };
                    case "aws:ec2/getSubnet:getSubnet":
                        return { id: args.inputs.id, vpcId: "vpc-0fedcba9" };
                    default:
                        throw new Error(`strict mocks: unexpected provider call ${args.token}`);
                }
            },
        },
        "nodefleet",
        "test",
        false,
        "organization",
    );
}

/** Records every resource constructed below the component it is passed to. */
export function recorder(): { transformation: pulumi.ResourceTransformation; recorded: Recorded[] } {
    const recorded: Recorded[] = [];
    const nameOf = (r: unknown) => (r as { __name?: string } | undefined)?.__name;
    const transformation: pulumi.ResourceTransformation = (a) => {
        const deps = a.opts.dependsOn;
        const list = deps === undefined ? [] : Array.isArray(deps) ? deps : [deps];
        const dependsOn = list.map((d) => nameOf(d) ?? "?");
        // A dependency given as a promise (a validator's handover, made when the host it leaves
        // is built) is named once it resolves; settle() waits for that.
        list.forEach((d, i) => {
            if (d instanceof Promise) void d.then((r) => (dependsOn[i] = nameOf(r) ?? "?"));
        });
        recorded.push({
            custom: !(a.resource instanceof pulumi.ComponentResource),
            type: a.type,
            name: a.name,
            parent: nameOf(a.opts.parent),
            dependsOn,
            protect: a.opts.protect === true,
            ignoreChanges: a.opts.ignoreChanges ?? [],
            additionalSecretOutputs: (a.opts as pulumi.CustomResourceOptions).additionalSecretOutputs ?? [],
            version: a.opts.version,
            props: a.props,
            resource: a.resource,
        });
        return undefined;
    };
    return { transformation, recorded };
}

export function value<T>(o: pulumi.Input<T>): Promise<T> {
    return new Promise((resolve) => pulumi.output(o).apply((v) => resolve(v as T)));
}

/** Wait until every recorded resource is registered with the (mock) engine. */
export async function settle(recorded: readonly Recorded[]): Promise<void> {
    await Promise.all(recorded.map((r) => value(r.resource.urn)));
}

export function inputsOf(name: string): any {
    // A step and the component that holds it may share a name (a gate, the monitoring agent): the step.
    const r = registered.find((x) => x.name === name && x.custom) ?? registered.find((x) => x.name === name);
    if (!r) throw new Error(`no registered resource named ${name}; have: ${registered.map((x) => x.name).join(", ")}`);
    return r.inputs;
}

/** The file of a registered copy step's bundle named by `digest`; fails, naming `what`, when none holds it. */
function bundledFile(digest: string, what: string): string {
    for (const copy of registered.filter((r) => r.type === "command:remote:CopyToRemote")) {
        const dir = copy.archivePath;
        if (dir !== undefined && fs.existsSync(path.join(dir, digest))) return fs.readFileSync(path.join(dir, digest), "utf8");
    }
    throw new Error(`${what} runs the bundled script ${digest}, which no copy step's bundle holds`);
}

/**
 * A command step's script as its host runs it: its stdin, or for a step that runs a script of its
 * host's bundle (components/hosts/tools.ts), that file of a registered copy step's bundle, found by
 * the digest its runner names; for one whose stdin sets its secrets first (`. "$f"`), the stdin
 * followed by that file. Fails when no copy step's bundle holds it.
 */
export function scriptOf(name: string): string {
    const stdin = String(inputsOf(name).stdin ?? "");
    const digest = runnerDigest(stdin);
    if (digest === undefined) return stdin;
    const body = bundledFile(digest, name);
    return stdin.endsWith('\n. "$f"\n') ? `${stdin}${body}` : body;
}

/**
 * A teardown step's removal as its host runs it on destroy: the script of the host's bundle its
 * delete command's runner names (a `/bin/sh -c` of the runner). Fails when it has no such delete.
 */
export function deleteScriptOf(name: string): string {
    const del = String(inputsOf(name).delete ?? "");
    const digest = runnerDigest(del);
    if (!/^(sudo -n )?\/bin\/sh -c /.test(del) || digest === undefined) throw new Error(`${name} has no delete command that runs a script of its host's bundle: ${del.slice(0, 80)}`);
    return bundledFile(digest, `${name}'s delete`);
}

/** Custom (cloud and command) resources registered, by type; components left out. */
/** The custom resources registered, per type; the read of the stack's own outputs (a stack reference) creates nothing and is left out. */
export function countByType(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const r of registered.filter((x) => x.custom && x.type !== "pulumi:pulumi:StackReference")) out[r.type] = (out[r.type] ?? 0) + 1;
    return out;
}

/** Set the stack config the way the engine would: values as strings, secret keys listed. */
export function setStackConfig(fleet: unknown, secrets: Record<string, string>, plainKeys: readonly string[] = []): void {
    const config: Record<string, string> = { "nodefleet:fleet": JSON.stringify(fleet) };
    for (const [k, v] of Object.entries(secrets)) config[`nodefleet:${k}`] = v;
    pulumi.runtime.setAllConfig(
        config,
        Object.keys(secrets).filter((k) => !plainKeys.includes(k)).map((k) => `nodefleet:${k}`),
    );
}
