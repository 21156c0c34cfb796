// RPC URLs on their way to a host. A URL may carry an API key (`{secret: <name>}` in the
// config), so every node's URLs travel together as one secret: inside its key step's script, into
// a root-only file on the host, and a hash of them (a secret in state too) re-runs the steps that
// read that file when one changes. No URL is on a command line, in a step's plain inputs or in a
// host tool's output (they print scheme://host only).
import * as pulumi from "@pulumi/pulumi";
import type { RpcUrl } from "../values/primitives";
import { contentHash } from "../base/render";

/** A secret config value by its key (the stack config's `secret`). */
export type SecretLookup = (key: string) => pulumi.Output<string>;

/** The URLs' values, in order, as one secret Output. */
export function resolveUrls(urls: readonly RpcUrl[], secret: SecretLookup): pulumi.Output<string[]> {
    return pulumi.secret(pulumi.all(urls.map((u) => (typeof u === "string" ? pulumi.output(u) : secret(u.secret)))));
}

/** A digest of the URLs for a step's triggers: it changes when one does, and stays a secret in state. */
export function urlsHash(urls: pulumi.Output<string[]>): pulumi.Output<string> {
    return pulumi.secret(urls.apply((list) => contentHash(JSON.stringify(list))));
}
