// A bounded pool of async jobs: `status` checks hosts with it, the cli tier runs previews with it.

/** Runs the jobs at most `n` at a time; the results in the jobs' order. */
export async function pool<T>(n: number, jobs: readonly (() => Promise<T>)[]): Promise<T[]> {
    const out: T[] = new Array(jobs.length);
    let next = 0;
    const worker = async () => {
        while (next < jobs.length) {
            const i = next++;
            out[i] = await jobs[i]!();
        }
    };
    await Promise.all(Array.from({ length: Math.min(Math.max(1, n), jobs.length) }, worker));
    return out;
}
