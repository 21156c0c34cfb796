// A cloud host's SSH host key, pinned from the first boot (docs/hosts.md). Hetzner has no API that
// returns a server's host key, and EC2 prints only fingerprints, only on its console, minutes after
// boot; so nodefleet makes an ed25519 key (a secret of the state), hands it to the server in its
// cloud-init user-data, and pins it for the first connection. Over that pinned connection the host
// makes a key of its own, nodefleet reads its public half and swaps sshd to it: the first-boot key
// (readable through the metadata service by any process on the host for the server's life) is
// trusted by no connection after the swap. No connection ever trusts an unknown key.
import * as pulumi from "@pulumi/pulumi";
import * as command from "@pulumi/command";
import type { Connection } from "./connection";
import { sshConnection, rootShell, type ConnectionParts } from "./host";
import { ed25519PublicKey, makeKeyScript, type FirstBootKeyProps, type HostKeyPair, type HostKeySwapProps } from "./host-key-provider";

/**
 * The providers as the state keeps them: loaders of host-key-provider.ts, which the dynamic
 * provider's process compiles on load (as the drift check's loader does, drift.ts).
 */
type Provider = Required<Pick<pulumi.dynamic.ResourceProvider, "create" | "diff">> & pulumi.dynamic.ResourceProvider;
function hostKeyProviders(): { firstBootKeyProvider: Provider; hostKeySwapProvider: Provider } {
    const g = globalThis as { nodefleetHostKey?: { firstBootKeyProvider: Provider; hostKeySwapProvider: Provider } };
    return (g.nodefleetHostKey ??=
        (require("ts-node").register({ transpileOnly: true }), require(`${process.cwd()}/components/hosts/host-key-provider`)));
}

export const firstBootKeyLoader: pulumi.dynamic.ResourceProvider = {
    create: (i: FirstBootKeyProps) => hostKeyProviders().firstBootKeyProvider.create(i),
    diff: (d: string, o: FirstBootKeyProps, n: FirstBootKeyProps) => hostKeyProviders().firstBootKeyProvider.diff(d, o, n),
};

export const hostKeySwapLoader: pulumi.dynamic.ResourceProvider = {
    create: (i: HostKeySwapProps) => hostKeyProviders().hostKeySwapProvider.create(i),
    diff: (d: string, o: HostKeySwapProps, n: HostKeySwapProps) => hostKeyProviders().hostKeySwapProvider.diff(d, o, n),
    update: (d: string, o: HostKeySwapProps, n: HostKeySwapProps) => hostKeyProviders().hostKeySwapProvider.update!(d, o, n),
};

/** The ed25519 host key of a server's user-data: made once, a secret in the state. */
export class FirstBootKey extends pulumi.dynamic.Resource {
    declare readonly publicKey: pulumi.Output<string>;
    declare readonly privateKey: pulumi.Output<string>;

    constructor(name: string, host: string, opts?: pulumi.CustomResourceOptions) {
        super(
            firstBootKeyLoader,
            name,
            { host, publicKey: undefined, privateKey: undefined },
            { ...opts, additionalSecretOutputs: ["privateKey"] },
        );
    }
}

/** The swap of a host's sshd to the key the host made (host-key-provider.ts). */
export class HostKeySwap extends pulumi.dynamic.Resource {
    constructor(
        name: string,
        args: { host: string; connection: pulumi.Input<Connection>; firstBootKey: pulumi.Input<string>; hostKey: pulumi.Input<string> },
        opts?: pulumi.CustomResourceOptions,
    ) {
        super(
            hostKeySwapLoader,
            name,
            { host: args.host, connection: pulumi.secret(args.connection), firstBootKey: args.firstBootKey, hostKey: args.hostKey },
            opts,
        );
    }
}

/**
 * A server's cloud-init user-data (`#cloud-config`): the first-boot host key as its only host key,
 * the login user with passwordless sudo (the cloud's SSH key is installed for it), no password
 * logins. Written as JSON, which is YAML: every value is a JSON string, quoted whatever it holds.
 */
export function renderCloudConfig(args: { readonly sshUser: string; readonly hostKey: HostKeyPair }): string {
    const doc: Record<string, unknown> = {
        ssh_deletekeys: true,
        ssh_keys: { ed25519_private: args.hostKey.privateKey, ed25519_public: args.hostKey.publicKey },
        ssh_pwauth: false,
        disable_root: args.sshUser !== "root",
    };
    if (args.sshUser !== "root") {
        // The image's default user renamed: the key the cloud installs (sshKeyName) goes to it.
        doc.system_info = {
            default_user: { name: args.sshUser, lock_passwd: true, gecos: "nodefleet", sudo: "ALL=(ALL) NOPASSWD:ALL", shell: "/bin/bash" },
        };
        doc.users = ["default"];
    }
    return `#cloud-config\n${JSON.stringify(doc, null, 2)}\n`;
}

export interface FirstBootData {
    readonly key: FirstBootKey;
    /** The server's user-data, a secret (it holds the first-boot key's private half). */
    readonly userData: pulumi.Output<string>;
}

/**
 * The first-boot key of a server nodefleet is about to make, and the user-data that hands it over;
 * none for a server whose key the operator gives (`hostKey`: made before nodefleet pinned keys at
 * first boot, its user-data long read).
 */
export function firstBootData(
    name: string,
    host: string,
    sshUser: string,
    hostKey: string | undefined,
    parent: pulumi.Resource,
): FirstBootData | undefined {
    if (hostKey !== undefined) return undefined;
    const key = new FirstBootKey(`${name}-first-boot-key`, host, { parent });
    const userData = pulumi.secret(
        pulumi
            .all([key.privateKey, key.publicKey])
            .apply(([privateKey, publicKey]) => renderCloudConfig({ sshUser, hostKey: { privateKey, publicKey } })),
    );
    return { key, userData };
}

/** The pin of a host whose key step has not run yet: no key matches it (the provider refuses to connect). */
export const KEY_NOT_READ = "ssh-ed25519 (the key this host makes is not read yet: its host-key step has not run)";

/**
 * The key the host made, from its key step's output: KEY_NOT_READ while the step has not run (an
 * `up --target` that leaves it out), so that nothing connects on its strength; refused, naming the
 * host, when the host answered anything but an ed25519 public key.
 */
export function readMadeKey(host: string, out: string | undefined): string {
    if (out === undefined || out === "") return KEY_NOT_READ;
    let said: unknown;
    try {
        said = (JSON.parse(out.trim().split("\n").pop() ?? "") as { hostKey?: unknown }).hostKey;
    } catch {
        said = undefined;
    }
    const key = typeof said === "string" ? ed25519PublicKey(said) : undefined;
    if (key === undefined)
        throw new Error(`hosts.${host}: the host did not answer an ed25519 host key when asked to make one; nothing more runs on it`);
    return key;
}

export interface PinnedHost {
    /** Every step's connection: pinned to the key the host made (or to the key the operator gave). */
    readonly connection: pulumi.Output<Connection>;
    /** The same with the login key as given, for OpenSSH's client (the drift check). */
    readonly checkConnection: pulumi.Output<Connection>;
    /** What the host's first step depends on: the swap done (or nothing to wait for). */
    readonly after: pulumi.Resource[];
    /** The key every step pins (not a secret: a public key): `nodefleet status` pins it too. */
    readonly hostKey: pulumi.Output<string>;
}

/**
 * The host's connection, pinned. With `hostKey` given (a server made before nodefleet pinned keys at
 * first boot) that key; else the first-boot key for one step that has the host make its own key,
 * then the swap to that key, then that key for everything else.
 */
export function pinHostKey(
    name: string,
    host: string,
    ssh: ConnectionParts,
    first: FirstBootData | undefined,
    hostKey: string | undefined,
    parent: pulumi.Resource,
    after: pulumi.Resource[],
): PinnedHost {
    if (first === undefined) {
        if (hostKey === undefined) throw new Error(`unreachable: hosts.${host}: neither a first-boot key nor a given host key`);
        return {
            connection: sshConnection({ ...ssh, hostKey }),
            checkConnection: sshConnection({ ...ssh, hostKey }, "as given"),
            after,
            hostKey: pulumi.output(hostKey),
        };
    }
    const firstBoot = sshConnection({ ...ssh, hostKey: first.key.publicKey });
    const make = new command.remote.Command(
        `${name}-host-key`,
        { connection: firstBoot, create: rootShell(ssh.user), stdin: makeKeyScript(host), addPreviousOutputInEnv: false },
        // Runs once: after the swap the first-boot key is refused, so a run again (a changed login
        // key, a new script) could only fail; the swap below takes such changes.
        { parent, dependsOn: after, ignoreChanges: ["connection", "create", "stdin"] },
    );
    const madeKey = make.stdout.apply((out) => readMadeKey(host, out));
    const swap = new HostKeySwap(
        `${name}-host-key-swap`,
        { host, connection: sshConnection(ssh, "as given"), firstBootKey: first.key.publicKey, hostKey: madeKey },
        { parent, dependsOn: [make] },
    );
    return {
        connection: sshConnection({ ...ssh, hostKey: madeKey }),
        checkConnection: sshConnection({ ...ssh, hostKey: madeKey }, "as given"),
        after: [swap],
        hostKey: madeKey,
    };
}
