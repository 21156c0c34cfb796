// Waiting on a real process under test (the contract tests' reth, geth, zgs_node).
import * as assert from "node:assert/strict";
import type { ChildProcess } from "node:child_process";
import * as net from "node:net";

/**
 * Polls `f` every 0.5 s until it gives a value (a throw counts as "not yet"); fails after `seconds`,
 * or at once if `child` (called `name` in the message) exits first, with `log()` in the message.
 */
export async function until<T>(what: string, seconds: number, f: () => Promise<T | undefined>, child?: ChildProcess, log?: () => string, name = "the process"): Promise<T> {
    const deadline = Date.now() + seconds * 1000;
    for (;;) {
        if (child && child.exitCode !== null) assert.fail(`${name} exited (${child.exitCode}) before ${what}:\n${log?.()}`);
        try {
            const v = await f();
            if (v !== undefined) return v;
        } catch {
            /* not yet */
        }
        if (Date.now() > deadline) assert.fail(`no ${what} within ${seconds} s:\n${log?.()}`);
        await new Promise((r) => setTimeout(r, 500));
    }
}

/** A TCP port of this machine's loopback that nothing listens on now. */
export function freePort(): Promise<number> {
    return new Promise((resolve, reject) => {
        const server = net.createServer();
        server.once("error", reject);
        server.listen(0, "127.0.0.1", () => {
            const port = (server.address() as net.AddressInfo).port;
            server.close(() => resolve(port));
        });
    });
}
