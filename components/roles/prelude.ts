// The first steps every role shares: its release on the host -> teardown (holds only the removal
// for `pulumi destroy`; its create never changes, so it is never replaced, and destroy stops the
// node after the steps above it are gone) -> its key (a secret script, output unlogged).
import * as pulumi from "@pulumi/pulumi";
import type * as command from "@pulumi/command";
import { Host, remoteStep } from "../hosts/host";
import type { SecretScript } from "../hosts/scripts";
import { nodeDriftGroup } from "../hosts/drift";

export interface PreludeArgs {
    readonly node: { readonly name: string };
    /** The release it runs, resolved once by the fleet (its host installs it). */
    readonly release: { readonly name: string };
    readonly host: Host;
    readonly user: string;
    /** The teardown step's first word: "storage", "sequencer", "validator". */
    readonly label: string;
    readonly removeScript: string;
    /**
     * The key step's name suffix ("miner-key", "validator-key") and its script: its body runs from
     * the host's bundle, its secrets come on the step's stdin, a secret.
     */
    readonly keyStep: string;
    readonly keyScript: pulumi.Output<SecretScript>;
    /** What must finish before the key is written (a validator's handover on the host it leaves). */
    readonly keyAfter?: readonly pulumi.Input<pulumi.Resource>[];
}

export interface Prelude {
    readonly base: { readonly connection: Host["connection"]; readonly user: string };
    readonly key: command.remote.Command;
}

export function rolePrelude(parent: pulumi.Resource, name: string, a: PreludeArgs): Prelude {
    const { node, host } = a;
    const after = host.releases.get(a.release.name);
    if (after === undefined) throw new Error(`unreachable: ${node.name}: host ${host.hostName} does not install release ${a.release.name}`);
    const base = { connection: host.connection, user: a.user };
    const teardown = remoteStep(
        `${name}-teardown`,
        { ...base, script: `echo '${a.label} ${node.name}: teardown registered'\n`, onDelete: a.removeScript, deleteBundle: host.tools },
        { parent, dependsOn: [after] },
    );
    const key = remoteStep(
        `${name}-${a.keyStep}`,
        {
            ...base,
            // The body is rendered without the secrets (its renderer's contract; the bundle checks it).
            script: pulumi.unsecret(a.keyScript.apply((s) => s.body)),
            secrets: pulumi.secret(a.keyScript.apply((s) => s.secrets)),
            sensitive: true,
            bundle: host.tools,
            drift: { drift: host.drift, group: nodeDriftGroup(node.name, "key") },
        },
        { parent, dependsOn: [teardown, ...(a.keyAfter ?? [])] },
    );
    return { base, key };
}
