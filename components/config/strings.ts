// One rule for every string of the fleet config, values and map keys alike: no control
// characters and no surrounding whitespace. A value that reaches a host is rendered into shell,
// unit, TOML and nftables files; whatever a field's own format check allows, a newline, a NUL or
// a Unicode line separator has no business in any of them. Messages name the path and the
// character's code point, never the value (a field may name a secret).

// C0/C1 controls (newline, CR, tab, NUL, ESC, DEL, ...), Unicode line/paragraph separators, and
// the bidirectional controls that make text read differently than it runs.
const FORBIDDEN = /[\p{Cc}\p{Zl}\p{Zp}\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/u;

function codePoint(ch: string): string {
    return `U+${ch.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")}`;
}

/** Why a config string is refused, or undefined. */
export function stringReason(s: string): string | undefined {
    const bad = FORBIDDEN.exec(s);
    if (bad) return `contains a control or line-separator character (${codePoint(bad[0])}) at position ${bad.index + 1}`;
    if (/^\s/u.test(s)) return "starts with whitespace";
    if (/\s$/u.test(s)) return "ends with whitespace";
    return undefined;
}

export interface StringIssue {
    readonly path: readonly PropertyKey[];
    readonly reason: string;
}

/** Every string rule broken anywhere in `raw`, in document order. */
export function stringIssues(raw: unknown, path: readonly PropertyKey[] = []): StringIssue[] {
    if (typeof raw === "string") {
        const reason = stringReason(raw);
        return reason ? [{ path, reason }] : [];
    }
    if (Array.isArray(raw)) return raw.flatMap((item, i) => stringIssues(item, [...path, i]));
    if (raw !== null && typeof raw === "object") {
        return Object.entries(raw).flatMap(([key, value]) => {
            const reason = stringReason(key);
            // The key itself is not repeated in the message: it is the broken part.
            return reason ? [{ path, reason: `a key ${reason}` }] : stringIssues(value, [...path, key]);
        });
    }
    return [];
}
