// What nodefleet does about the Pulumi SDK's own costs: at fleet scale (measured by
// `scripts/bench.sh scale`, which shows each choice side by side with the SDK's default), and in its
// program runner's report of a refusal (docs/development.md, "A refusal that took a minute").
import * as pulumi from "@pulumi/pulumi";

/**
 * The SDK formats a stack trace for every promise it makes (`debuggablePromise`) and keeps it only
 * for the report `PULUMI_DEBUG_PROMISE_LEAKS` asks for: about half of a large fleet's evaluation.
 * `make` runs with traces off unless that report is asked for. The engine's source positions are
 * not affected: the SDK takes those with a limit of its own. An error thrown inside `make` has no
 * stack, only its message (set PULUMI_DEBUG_PROMISE_LEAKS=1 to get both).
 */
export function withoutPromiseTraces<T>(make: () => T): T {
    if (process.env.PULUMI_DEBUG_PROMISE_LEAKS) return make();
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    try {
        return make();
    } finally {
        Error.stackTraceLimit = limit;
    }
}

/**
 * The SDK records the whole call stack of every resource's registration, and the engine keeps it in
 * the state with the source position (its first frame), rewritten at every checkpoint
 * (scripts/bench.sh engine). Neither names nodefleet's code: a step's first frame is the command
 * package's constructor (node_modules/@pulumi/command), the same for every step. nodefleet records
 * none: the engine's errors still name the resource by its URN. Applied once, to the SDK loaded by
 * the program; a later SDK without the hook is left as it is.
 */
export function dropResourceStackTraces(): void {
    const resource = pulumi.Resource as unknown as { stackTrace?: (skip: number) => unknown[]; nodefleetTrimmed?: boolean };
    if (typeof resource.stackTrace !== "function" || resource.nodefleetTrimmed) return;
    resource.stackTrace = () => [];
    resource.nodefleetTrimmed = true;
}

/** Whether the SDK's own debugging aids stay on (`NODEFLEET_SDK_DEBUG=1`). */
const sdkDebug = () => process.env.NODEFLEET_SDK_DEBUG === "1";

/**
 * Two more of the SDK's costs that grow with the fleet, cut for the whole program (measured by
 * `scripts/bench.sh engine`, which shows each phase's CPU by process):
 *
 * - `debuggablePromise` formats a stack trace for each promise, also for the promises made after
 *   `withoutPromiseTraces` has returned (an RPC's answer, an apply's callback); under ts-node each
 *   trace is mapped through the source maps. It now runs with traces off unless
 *   PULUMI_DEBUG_PROMISE_LEAKS asks for the report that reads them.
 * - Every resource's registration sends three to four debug-level messages to the engine, one RPC
 *   each and one at a time ("Registering resource", "RPC prepared", "RPC finished"), which the
 *   engine shows only under `--debug`. nodefleet's program drops them.
 *
 * NODEFLEET_SDK_DEBUG=1 leaves both as the SDK has them. Applied once, to the SDK the program
 * loaded; an SDK without these functions is left as it is. Warnings and errors are untouched.
 */
export function trimSdkCosts(): void {
    if (sdkDebug()) return;
    const debuggable = require("@pulumi/pulumi/runtime/debuggable") as {
        debuggablePromise?: (p: unknown, ctx: unknown) => unknown;
        nodefleetTrimmed?: boolean;
    };
    const original = debuggable.debuggablePromise;
    if (typeof original === "function" && !debuggable.nodefleetTrimmed && !process.env.PULUMI_DEBUG_PROMISE_LEAKS) {
        debuggable.debuggablePromise = (p, ctx) => withoutPromiseTraces(() => original(p, ctx));
        debuggable.nodefleetTrimmed = true;
    }
    const log = require("@pulumi/pulumi/log") as { debug?: (...args: unknown[]) => Promise<void>; nodefleetTrimmed?: boolean };
    if (typeof log.debug === "function" && !log.nodefleetTrimmed) {
        log.debug = () => Promise.resolve();
        log.nodefleetTrimmed = true;
    }
}

/**
 * The program, its refusals (RunError) leaving it without their stacks. Pulumi's runner shows only a
 * RunError's message, but it also formats every error that leaves the program with `util.inspect`
 * in colour, for its trace span; on Node 20.20 (nodejs/node#64011, fixed in later lines) that never
 * ends when a frame names a file right under a scope's folder, as the SDK's source maps make its own
 * frames (`node_modules/@pulumi/resource.ts`): it grows a string until V8 refuses it, 12 CPU-s and
 * about a gigabyte later, and a refused preview waits for it (docs/development.md).
 */
export async function withRefusalsUnstacked<T>(program: () => Promise<T>): Promise<T> {
    try {
        return await program();
    } catch (e) {
        if (pulumi.RunError.isInstance(e)) (e as Error).stack = "";
        throw e;
    }
}
