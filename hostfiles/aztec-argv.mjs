// nodefleet: loaded into the Aztec CLI's node process with NODE_OPTIONS=--import=<this file> by
// aztec-register.py. Aztec 4.x's add-l1-validator takes the attester's BLS secret key
// only as a flag (--bls-secret-key), and a flag is readable by every user in ps and
// /proc/<pid>/cmdline. This appends it to the process's own argv, which commander parses and no
// other process sees, from NODEFLEET_BLS_SECRET_KEY (read from a root-only file), and removes the
// variable so that nothing the CLI starts inherits it. It never prints the key.
const key = process.env.NODEFLEET_BLS_SECRET_KEY;
if (key !== undefined) {
    delete process.env.NODEFLEET_BLS_SECRET_KEY;
    if (key !== "" && !process.argv.includes("--bls-secret-key")) process.argv.push("--bls-secret-key", key);
}
