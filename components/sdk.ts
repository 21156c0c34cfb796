// What nodefleet does about the Pulumi SDK's own costs at fleet scale (measured by
// `scripts/bench.sh scale`, which shows each choice side by side with the SDK's default).
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
