// Config paths in messages: ["nodes", 2, "sequencer", "coinbase"] -> "nodes[2].sequencer.coinbase".

export function formatPath(path: readonly PropertyKey[]): string {
    let out = "";
    for (const p of path) out += typeof p === "number" ? `[${p}]` : out === "" ? String(p) : `.${String(p)}`;
    return out || "fleet";
}

/** Fields that name a secret config key: their value is never shown, whatever it holds. */
export function isSecretField(path: readonly PropertyKey[]): boolean {
    const last = [...path].reverse().find((p) => typeof p === "string");
    return typeof last === "string" && (/Secret$/.test(last) || last === "secret");
}

export function samePath(a: readonly PropertyKey[], b: readonly PropertyKey[]): boolean {
    return a.length === b.length && a.every((p, i) => p === b[i]);
}
