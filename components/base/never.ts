/** Where a `switch` over a union has handled every case: the compiler proves this is never reached. */
export function assertNever(x: never): never {
    throw new Error(`unexpected value: ${JSON.stringify(x)}`);
}
