#!/usr/bin/env node
// solc's command line, as forge calls it (`--version`, `--standard-json` on stdin), served by the
// npm solc package: the same Solidity compiler, built to wasm. lab/aztec.sh installs this next to
// the package and names it in FOUNDRY_SOLC, so forge never downloads a compiler. Aztec's contracts
// come compiled with @aztec/l1-artifacts: forge reads `--version` and finds its cache current.
"use strict";
const fs = require("fs");
const path = require("path");
const solc = require(path.join(__dirname, "node_modules", "solc"));

const args = process.argv.slice(2);
if (args.includes("--version")) {
    // forge parses "Version: X.Y.Z+commit.H.PLATFORM"; solcjs says Emscripten where a native build says Linux.
    process.stdout.write(`solc, the solidity compiler commandline interface\nVersion: ${solc.version().replace(".Emscripten.clang", ".Linux.g++")}\n`);
} else if (args.includes("--standard-json")) {
    let input = "";
    process.stdin.setEncoding("utf8");
    process.stdin.on("data", (chunk) => (input += chunk));
    process.stdin.on("end", () => {
        const read = (file) => {
            try {
                return { contents: fs.readFileSync(file, "utf8") };
            } catch (e) {
                return { error: String(e.message) };
            }
        };
        process.stdout.write(solc.compile(input, { import: read }));
    });
} else {
    process.stderr.write(`solc (npm solc ${solc.version()}): only --version and --standard-json are served here\n`);
    process.exit(1);
}
