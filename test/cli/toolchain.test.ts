// The toolchain's plugin routes (lab/toolchain.sh), run on a scratch copy of the scripts so
// the checkout's .tools/bin is left alone. It runs after the test command has provided the real
// toolchain once: the scratch reuses that CLI build (its cache directory is linked in) and the
// real plugin binaries, so nothing is built here. What it cannot show: a build from a cold
// cache (the test command's own first run does that, and prints which route it took).
import { after, before, describe, it } from "node:test";
import * as assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { ROOT } from "../support/cli";

const UPSTREAM = path.resolve(ROOT, "../shared/upstream");
const LANGUAGE_ARCHIVE = "pulumi-3.248.0-language-nodejs.tar.gz";
/** The real binaries the test command's toolchain provided, in their install layout. */
const INSTALLED: Record<string, string> = {
    "pulumi-language-nodejs": ".tools/pulumi/bin/pulumi-language-nodejs",
    "pulumi-resource-command": ".tools/pulumi/plugins/resource-command-v1.2.1/pulumi-resource-command",
    "pulumi-resource-hcloud": ".tools/pulumi/plugins/resource-hcloud-v1.39.1/pulumi-resource-hcloud",
};
const real = (name: string) => fs.realpathSync(path.join(ROOT, INSTALLED[name]!));
const CACHE = process.env.NODEFLEET_CACHE ?? path.join(process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), ".cache"), "nodefleet");

describe("toolchain plugin routes", () => {
    let dir: string;

    before(() => {
        dir = fs.mkdtempSync(path.join(os.tmpdir(), "nodefleet-toolchain-"));
        for (const f of ["lab/toolchain.sh", "lab/toolchain/versions.sh", "lab/lib/go.sh", "lab/lib/progress.sh", "lab/lib/prebuilt.sh", "lab/toolchain/go.mod", "lab/toolchain/go.sum", "lab/toolchain/upstream.sha256", "lab/toolchain/prebuilt.sha256", "lab/toolchain/pulumi-resource-pulumi-nodejs"]) {
            fs.mkdirSync(path.dirname(path.join(dir, "root", f)), { recursive: true });
            fs.copyFileSync(path.join(ROOT, f), path.join(dir, "root", f));
        }
        // The patches are part of the CLI's cache key and of the command provider's.
        fs.cpSync(path.join(ROOT, "lab/toolchain/patches"), path.join(dir, "root/lab/toolchain/patches"), { recursive: true });
        // The CLI's cache entry (…/pulumi/<stamp>/pulumi) is shared; the plugins' is not.
        fs.mkdirSync(path.join(dir, "cache"));
        fs.symlinkSync(path.join(CACHE, "pulumi"), path.join(dir, "cache", "pulumi"));
        fs.mkdirSync(path.join(dir, "empty"));
        fs.mkdirSync(path.join(dir, "path"));
    });
    after(() => fs.rmSync(dir, { recursive: true, force: true }));

    /** toolchain.sh in the scratch root, with a PATH of only the system's directories (+ extra). */
    function toolchain(upstream: string, extraPath?: string, ...args: string[]) {
        const r = spawnSync("bash", [path.join(dir, "root/lab/toolchain.sh"), ...args], {
            encoding: "utf8",
            timeout: 120_000,
            env: {
                PATH: [extraPath, path.dirname(process.execPath), "/usr/local/bin", "/usr/bin", "/bin"].filter(Boolean).join(":"),
                HOME: path.join(dir, "home"),
                NODEFLEET_CACHE: path.join(dir, "cache"),
                NODEFLEET_UPSTREAM: upstream,
                // No prebuilt artifacts: the routes tested here are the machine's and the upstream
                // source's (the artifacts' own route: test/unit/prebuilt.test.ts).
                NODEFLEET_PREBUILT: path.join(dir, "empty"),
                GOFLAGS: "-mod=mod",
            },
        });
        return { status: r.status, stderr: r.stderr };
    }

    it("with neither route, says so and names both", () => {
        const r = toolchain(path.join(dir, "empty"));
        assert.notEqual(r.status, 0);
        assert.match(r.stderr, /pulumi-language-nodejs v3\.248\.0 is not on this machine/);
        assert.match(r.stderr, /pulumi plugin install resource command v1\.2\.1/);
        assert.match(r.stderr, /NODEFLEET_UPSTREAM/);
    });

    it("refuses an archive whose sha256 is not the pinned one, before unpacking it", () => {
        const mirror = path.join(dir, "tampered");
        fs.mkdirSync(mirror);
        fs.writeFileSync(path.join(mirror, LANGUAGE_ARCHIVE), Buffer.concat([fs.readFileSync(path.join(UPSTREAM, LANGUAGE_ARCHIVE)), Buffer.from("\n")]));
        const r = toolchain(mirror);
        assert.notEqual(r.status, 0);
        assert.match(r.stderr, new RegExp(`${LANGUAGE_ARCHIVE} has sha256 [0-9a-f]{64}, but .*upstream\\.sha256 pins [0-9a-f]{64}: refusing to build from it`));
        assert.doesNotMatch(r.stderr, /go: /, "nothing was built");
    });

    it("takes the machine's plugins from PATH and checks their versions", () => {
        for (const name of ["pulumi-language-nodejs", "pulumi-resource-command"]) fs.symlinkSync(real(name), path.join(dir, "path", name));
        const r = toolchain(path.join(dir, "empty"), path.join(dir, "path"));
        assert.equal(r.status, 0, r.stderr);
        assert.match(r.stderr, /pulumi-language-nodejs v3\.248\.0: the machine's/);
        assert.match(r.stderr, /pulumi-resource-command 1\.2\.1: the machine's/);
        assert.match(r.stderr, /pulumi v3\.248\.0, language host v3\.248\.0, command provider 1\.2\.1/);
        // Laid out where Pulumi looks for them, none on PATH: the language host beside the CLI
        // (its bundled location), the provider in a plugin directory a Pulumi home links to.
        const tools = path.join(dir, "root/.tools");
        assert.deepEqual(fs.readdirSync(path.join(tools, "bin")), ["pulumi"]);
        assert.equal(fs.realpathSync(path.join(tools, "bin/pulumi")), path.join(tools, "pulumi/bin/pulumi"));
        assert.equal(fs.realpathSync(path.join(tools, "pulumi/bin/pulumi-language-nodejs")), real("pulumi-language-nodejs"));
        // The dynamic-provider launcher (the drift check's HostDrift) beside it, as a release bundles it.
        assert.equal(fs.statSync(path.join(tools, "pulumi/bin/pulumi-resource-pulumi-nodejs")).mode & 0o777, 0o755);
        const home = path.join(dir, "home/.pulumi-test");
        const linked = spawnSync("bash", [path.join(dir, "root/lab/toolchain.sh"), "home", home], { encoding: "utf8" });
        assert.equal(linked.status, 0, linked.stderr);
        const plugin = path.join(home, "plugins/resource-command-v1.2.1/pulumi-resource-command");
        assert.ok(fs.readFileSync(plugin).equals(fs.readFileSync(real("pulumi-resource-command"))));
        const listed = spawnSync(path.join(tools, "bin/pulumi"), ["plugin", "ls", "--json"], { encoding: "utf8", env: { ...process.env, PULUMI_HOME: home, PULUMI_SKIP_UPDATE_CHECK: "1" } });
        assert.match(listed.stdout, /"name": "command"[\s\S]*"version": "1\.2\.1"/, listed.stderr);
    });

    it("with hcloud, takes the machine's hcloud provider too, and installs it into a home of its own", () => {
        // After the test above: the language host and command provider are on the scratch PATH.
        fs.symlinkSync(real("pulumi-resource-hcloud"), path.join(dir, "path", "pulumi-resource-hcloud"));
        const r = toolchain(path.join(dir, "empty"), path.join(dir, "path"), "hcloud");
        assert.equal(r.status, 0, r.stderr);
        assert.match(r.stderr, /pulumi-resource-hcloud 1\.39\.1: the machine's/);
        assert.match(r.stderr, /command provider 1\.2\.1, hcloud provider 1\.39\.1$/m);
        const installed = path.join(dir, "root/.tools/pulumi/plugins/resource-hcloud-v1.39.1/pulumi-resource-hcloud");
        assert.ok(fs.readFileSync(installed).equals(fs.readFileSync(real("pulumi-resource-hcloud"))));
        const home = path.join(dir, "home/.pulumi-own");
        fs.mkdirSync(path.join(home, "plugins"), { recursive: true }); // a runner's home with plugins of its own
        const r2 = spawnSync("bash", [path.join(dir, "root/lab/toolchain.sh"), "home", home], { encoding: "utf8" });
        assert.equal(r2.status, 0, r2.stderr);
        for (const plugin of ["resource-command-v1.2.1/pulumi-resource-command", "resource-hcloud-v1.39.1/pulumi-resource-hcloud"]) {
            assert.ok(fs.existsSync(path.join(home, "plugins", plugin)), `${plugin} installed into the home`);
        }
    });

    it("with hcloud and no route for it, names the plugin install command", () => {
        fs.rmSync(path.join(dir, "path", "pulumi-resource-hcloud"));
        fs.rmSync(path.join(dir, "root/.tools/pulumi/plugins/resource-hcloud-v1.39.1"), { recursive: true });
        const r = toolchain(path.join(dir, "empty"), path.join(dir, "path"), "hcloud");
        assert.notEqual(r.status, 0);
        assert.match(r.stderr, /pulumi-resource-hcloud 1\.39\.1 is not on this machine .* run `pulumi plugin install resource hcloud v1\.39\.1`/);
    });

    it("does not use a plugin on PATH that reports another version", () => {
        const other = path.join(dir, "other");
        fs.mkdirSync(other);
        // A wrong-version binary: only its --version answer matters, it is never run as a plugin.
        fs.writeFileSync(path.join(other, "pulumi-language-nodejs"), "#!/bin/sh\necho v3.100.0\n", { mode: 0o755 });
        const r = toolchain(path.join(dir, "empty"), other);
        assert.notEqual(r.status, 0);
        assert.match(r.stderr, /not using .*pulumi-language-nodejs: it reports version 'v3\.100\.0', nodefleet pins v3\.248\.0/);
    });
});
