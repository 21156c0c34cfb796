// The test tiers' own helpers where a defect would hide a failure: what an assertion shows of a
// failed pulumi run (CI keeps only an excerpt of a run's log).
import { describe, it } from "node:test";
import * as assert from "node:assert/strict";
import { failureOf } from "../support/cli";

const FAILED_UP = [
    "Updating (dev):",
    "    command:remote:Command fleet-dev-3-release-zgs deleting failed error: Process exited with status 1",
    "Diagnostics:",
    "  command:remote:Command (fleet-dev-3-release-zgs):",
    "    error: Process exited with status 1: zgs: still in use by storage-4",
    "",
    "Outputs:",
    ...Array.from({ length: 400 }, (_, i) => `  - output line ${i}`),
    "Resources:",
    "    41 unchanged",
    "    2 errored",
    "Duration: 5s",
].join("\n");

describe("failureOf", () => {
    it("shows pulumi's diagnostics (the resource and its error), which a failed up prints before a long list of outputs, and the tail", () => {
        const shown = failureOf(FAILED_UP, 200);
        assert.match(shown, /^Diagnostics:\n {2}command:remote:Command \(fleet-dev-3-release-zgs\):\n {4}error: .*still in use by storage-4/);
        assert.doesNotMatch(shown.split("…")[0], /output line/, "the outputs are not part of the diagnostics");
        assert.match(shown, /2 errored\nDuration: 5s$/);
        // The tail alone would have missed the error.
        assert.doesNotMatch(FAILED_UP.slice(-3000), /still in use/);
    });

    it("is the tail alone when the output has no Diagnostics section (a command other than pulumi's, or one cut short)", () => {
        assert.equal(failureOf("a\nb\nc", 3), "b\nc");
    });
});
