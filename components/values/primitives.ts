// The config's building blocks: refined strings, secret references, URLs that may hold a
// credential, CIDR lists that must not open to the world. Used by the fleet's schema (schema.ts)
// and its monitoring section (monitoring.ts).
import { z } from "zod";
import * as v from "./validators";
import { describeWorld, worldFamilies } from "../base/cidr";

/** A zod string refined by one of the validators, keeping its precise reason; `title` names the kind of value in the docs. */
export function checked(reason: (s: string) => v.Reason, title: string) {
    return z
        .string()
        .superRefine((s, ctx) => {
            const r = reason(s);
            if (r) ctx.addIssue({ code: "custom", message: r });
        })
        .meta({ title });
}

export const evmAddress = checked(v.evmAddressReason, "EVM address (0x and 40 hex digits)");
/**
 * An address that receives stake, rewards or withdrawals, or a contract nodefleet calls: also
 * refused when nobody can sign for it (the zero address, 0x…dEaD, a precompile).
 */
export const usableAddress = checked((s) => v.evmAddressReason(s) ?? v.unusableAddressReason(s), "EVM address (0x and 40 hex digits)");
export const httpUrl = checked(v.httpUrlReason, "http(s) URL");
export const ipv4 = checked(v.ipv4Reason, "IPv4 address");
export const cidr = checked(v.cidrReason, "IPv4 or IPv6 CIDR");
export const multiaddr = checked(v.multiaddrReason, "libp2p multiaddr");
export const enode = checked(v.enodeReason, "enode URL");
export const cometPeer = checked(v.cometPeerReason, "CometBFT peer");
export const port = z.number().int().min(1).max(65535);

/**
 * Name of another config key that holds a secret (`pulumi config set --secret <name> …`).
 * Key material pasted here instead is refused: it would sit in Pulumi.<stack>.yaml in clear.
 */
export const secretRef = z
    .string()
    .superRefine((s, ctx) => {
        // Key material, a URL or a token (`<id>:<token>`) pasted here instead of a key's name.
        if (v.looksLikeSecretMaterial(s) || /[:/@]/.test(s)) {
            ctx.addIssue({
                code: "custom",
                message: "secret given as a plain value: store it with `pulumi config set --secret <name>` and put <name> here",
            });
        } else if (!/^[A-Za-z][A-Za-z0-9_-]{0,63}$/.test(s)) {
            ctx.addIssue({ code: "custom", message: "not a config key name (letters, digits, _ and -)" });
        }
    })
    .meta({ title: "name of a secret config key" });

/** A URL written in the config, or `{secret: <name>}` naming a secret config key that holds it. */
function urlOrSecret(plainReason: (value: string) => v.Reason) {
    return z
        .union(
            [
                z.string(),
                z.strictObject({
                    secret: z
                        .string()
                        .describe(
                            "Name of the secret config key holding the URL (`pulumi config set --secret <name>`, which asks for the value).",
                        ),
                }),
            ],
            {
                error: (issue) =>
                    issue.code === "invalid_union"
                        ? "expected an http(s) URL, or {secret: <name of a secret config key holding the URL>}"
                        : undefined,
            },
        )
        .superRefine((value, ctx) => {
            if (typeof value === "string") {
                const reason = plainReason(value);
                if (reason) ctx.addIssue({ code: "custom", message: reason });
                return;
            }
            const parsed = secretRef.safeParse(value.secret);
            if (!parsed.success) ctx.addIssue({ code: "custom", path: ["secret"], message: parsed.error.issues[0]!.message });
        })
        .meta({ title: "http(s) URL, or {secret: <config key>}" });
}

/**
 * An RPC URL: written in the config when it carries no credential, or `{secret: <name>}`, naming
 * a secret config key that holds it (hosted endpoints put API keys in the path, the query or
 * `user:password@`). A URL with a credential in plain config is refused without being echoed.
 * Either way the URL reaches a host only through the node's secret key step, into a root-only
 * file: it is never on a command line, in a step's plain inputs, or in a log line.
 */
export const rpcUrl = urlOrSecret((value) => v.urlCredentialReason(value) ?? v.httpUrlReason(value) ?? v.envSafeUrlReason(value));
export type RpcUrl = z.infer<typeof rpcUrl>;

/**
 * A release's URL: the same two forms. A private artifact store's URL carries its
 * credential in `user:password@` or a query token: refused in plain config, unechoed; from a secret,
 * it reaches the host only on the install step's stdin (a secret) and curl reads it from its own
 * stdin, never from its command line.
 */
export const releaseUrl = urlOrSecret((value) => v.urlCredentialReason(value, false) ?? v.httpUrlReason(value));
export type ReleaseUrl = z.infer<typeof releaseUrl>;

/**
 * A list of CIDRs that must not add up to the whole internet: "open to the world" is decided by
 * address math on the union (`::/0`, `0::0/0`, `0.0.0.0/1` + `128.0.0.0/1` all count), reported
 * at the entry that covers a family alone, else at the list.
 */
export function notWorld(what: string, advice = "") {
    return (list: readonly string[], ctx: z.RefinementCtx) => {
        const families = worldFamilies(list);
        if (families.length === 0) return;
        const alone = list.findIndex((c) => worldFamilies([c]).length === families.length);
        const path = alone >= 0 ? [alone] : [];
        ctx.addIssue({
            code: "custom",
            path,
            message: `${what} must not be open to the world: ${alone >= 0 ? "this range covers" : "together these ranges cover"} ${describeWorld(families)}${advice}`,
        });
    };
}

/** A host's name: a key of `hosts`, and what `abandonHost` names. */
export const hostName = z.string().regex(/^[a-z][a-z0-9-]{0,30}[a-z0-9]$/, "host names are 2-32 lowercase letters, digits and dashes");
export const unixUser = z.string().regex(/^[a-z_][a-z0-9_-]*$/, "not a Unix user name");
