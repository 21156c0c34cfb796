// What nodefleet's program changes in the Pulumi SDK it loads (components/fleet/sdk.ts), against the real
// SDK: its promises' stack traces and its debug messages to the engine. The engine is a recording
// stand-in here (the SDK's settings give the log functions an engine to call); that the engine bench
// runs faster is shown by scripts/bench.sh engine, not here.
import { describe, it } from "node:test";
import * as assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as path from "node:path";
import * as pulumi from "@pulumi/pulumi";
import { trimSdkCosts, withRefusalsUnstacked } from "../../components/fleet/sdk";

const settings = require("@pulumi/pulumi/runtime/settings") as { getEngine: () => unknown };
const log = require("@pulumi/pulumi/log") as { debug: (m: string) => Promise<void>; warn: (m: string) => Promise<void> };
/** What Pulumi's program runner makes of an error that leaves the program, for its log and its trace span. */
const runnerError = require("@pulumi/pulumi/cmd/run/error") as { defaultErrorMessage: (e: unknown) => string };
const debuggable = require("@pulumi/pulumi/runtime/debuggable") as { debuggablePromise: <T>(p: Promise<T>, ctx: string) => Promise<T> };

/** The messages the SDK sends to the engine while `run` runs, by severity. */
async function sent(run: () => Promise<void>): Promise<string[]> {
    const messages: string[] = [];
    const engine = { log: (req: { getSeverity(): number; getMessage(): string }, done: () => void) => (messages.push(`${req.getSeverity()} ${req.getMessage()}`), done()) };
    const real = settings.getEngine;
    settings.getEngine = () => engine;
    try {
        await run();
    } finally {
        settings.getEngine = real;
    }
    return messages;
}
/** The stack trace the SDK attached to a promise it was given (debuggablePromise marks its input). */
function traceOf(ctx: string): { trace: string; out: Promise<number> } {
    const input = Promise.resolve(1);
    const out = debuggable.debuggablePromise(input, ctx);
    return { trace: String((input as unknown as { _debugStackTrace?: string })._debugStackTrace), out };
}

describe("the SDK as the program runs it", () => {
    it("after trimSdkCosts: promises carry no stack trace, debug messages stay in the program, warnings still reach the engine", async () => {
        const before = await sent(() => log.debug("a debug line"));
        assert.equal(before.length, 1, "the SDK sends a debug message to the engine");
        assert.match(traceOf("before").trace, /\n\s+at /, "and a stack trace with each promise");

        trimSdkCosts();
        trimSdkCosts(); // twice is once

        const after = await sent(async () => {
            await log.debug("a debug line");
            await log.warn("a warning");
        });
        assert.deepEqual(after.map((m) => m.replace(/^\d+ /, "")), ["a warning"]);
        const { trace, out } = traceOf("after");
        assert.equal(trace, "Error", "a trace without frames");
        assert.equal(await out, 1, "the promise itself is the same");
        assert.match(new Error("outside").stack ?? "", /\n\s+at /, "errors elsewhere keep their stacks");
    });

    it("NODEFLEET_SDK_DEBUG=1 leaves the SDK as it is", () => {
        const program = `
            require(${JSON.stringify(path.join(__dirname, "../../components/fleet/sdk.js"))}).trimSdkCosts();
            const d = require("@pulumi/pulumi/runtime/debuggable");
            const l = require("@pulumi/pulumi/log");
            const input = Promise.resolve(1);
            d.debuggablePromise(input, "x");
            process.stdout.write(JSON.stringify({ traced: /\\n\\s+at /.test(input._debugStackTrace), trimmed: !!l.nodefleetTrimmed }));`;
        const r = spawnSync(process.execPath, ["-e", program], { encoding: "utf8", cwd: path.join(__dirname, "../../.."), env: { ...process.env, NODEFLEET_SDK_DEBUG: "1" } });
        assert.equal(r.status, 0, r.stderr);
        assert.deepEqual(JSON.parse(r.stdout), { traced: true, trimmed: false });
    });

    it("a refusal leaves the program without its stack, so the runner formats its message alone; other errors and results pass as they are", async () => {
        // What cannot be shown here without spending its 12 CPU-s: Node 20.20's inspect looping on the
        // SDK's frames (docs/development.md); that the runner never inspects a stackless error is.
        const refused = new pulumi.RunError("rollout: validator-1 alone would take 40.0% offline");
        assert.match(String(refused.stack), /\n\s+at /, "a RunError is made with its stack");
        const caught = await withRefusalsUnstacked(() => Promise.reject(refused)).catch((e: unknown) => e);
        assert.equal(caught, refused, "the same error, still a RunError");
        assert.ok(pulumi.RunError.isInstance(caught));
        assert.equal(refused.stack, "");
        assert.equal(runnerError.defaultErrorMessage(caught), "rollout: validator-1 alone would take 40.0% offline");

        const bug = new Error("a fault of nodefleet's own");
        const other = await withRefusalsUnstacked(async () => {
            throw bug;
        }).catch((e: unknown) => e);
        assert.equal(other, bug);
        assert.match(String(bug.stack), /\n\s+at /, "a fault keeps its stack: it is read to fix it");
        assert.deepEqual(await withRefusalsUnstacked(async () => ({ hosts: 2 })), { hosts: 2 });
    });
});
