// The generated configuration docs (components/fleet/reference.ts): current with the schema,
// every field described, and the JSON Schema usable by an editor's validator (ajv, draft 2020-12)
// on the stacks of this repository. What the JSON Schema cannot express (refinements such as
// "never open to the world", or checks across fields) is left to the loader; its tests are in
// config.test.ts and fuzz.test.ts.
import { describe, it } from "node:test";
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import Ajv2020 from "ajv/dist/2020";
import { parse } from "yaml";
import { configReference, fleetJsonSchema, generatedDocs } from "../../components/fleet/reference";
import { ROOT } from "../support/cli";

const read = (file: string) => fs.readFileSync(path.join(ROOT, file), "utf8");
const STALE = "is not current with components/config/schema.ts: run scripts/docs.sh and commit the result";

/** The `nodefleet:fleet` value of a stack file of this repository. */
function stackFleet(stack: string): unknown {
    return (parse(read(`Pulumi.${stack}.yaml`)) as { config: Record<string, unknown> }).config["nodefleet:fleet"];
}

/** Every object property in a JSON Schema, with its path. */
function properties(schema: unknown, at = "fleet"): [string, Record<string, unknown>][] {
    if (typeof schema !== "object" || schema === null) return [];
    const s = schema as Record<string, unknown>;
    const found: [string, Record<string, unknown>][] = [];
    for (const [key, field] of Object.entries((s.properties ?? {}) as Record<string, Record<string, unknown>>)) {
        found.push([`${at}.${key}`, field], ...properties(field, `${at}.${key}`));
    }
    for (const key of ["items", "additionalProperties"]) found.push(...properties(s[key], `${at}[]`));
    for (const key of ["oneOf", "anyOf"]) for (const [i, v] of ((s[key] ?? []) as unknown[]).entries()) found.push(...properties(v, `${at}|${i}`));
    return found;
}

describe("generated configuration docs", () => {
    it("docs/configuration.md, docs/fleet.schema.json, docs/faults.md and the Grafana dashboard are current", () => {
        const docs = Object.entries(generatedDocs());
        assert.deepEqual(docs.map(([file]) => file).sort(), ["dashboards/nodefleet-fleet.json", "docs/configuration.md", "docs/faults.md", "docs/fleet.schema.json"]);
        for (const [file, text] of docs) assert.equal(read(file), text, `${file} ${STALE}`);
    });

    it("every field of the fleet config has a description", () => {
        const fields = properties(fleetJsonSchema());
        assert.ok(fields.length > 80, `walked ${fields.length} fields`);
        const bare = fields.filter(([, f]) => typeof f.description !== "string" || f.description.length < 8).map(([p]) => p);
        assert.deepEqual(bare, []);
    });

    it("the reference has a table for each host kind, role and nested object", () => {
        const md = configReference();
        for (const heading of ["nodefleet:fleet", "hosts.<name> (kind: aws)", "hosts.<name> (kind: hetzner)", "hosts.<name> (kind: existing)", "hosts.<name>.rootVolume", "nodes[] (role: storage)", "nodes[].storage", "nodes[].sequencer (version: 2.0.x)", "nodes[].sequencer (version: 4.1.2)", "nodes[].validator", "nodes[].validator.cleanup", "releases.<name>"]) {
            assert.match(md, new RegExp(`^## \`(nodefleet:fleet\\.)?${heading.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}\``, "m"), heading);
        }
        assert.match(md, /^\| `portPrefix` \(required\) \| number or string \|/m);
        assert.match(md, /^\| `adminCidrs` \(required\) \| list of IPv4 or IPv6 CIDR \(at least 1\) \|/m);
    });

    it("an editor's validator accepts the dev, staging and prod stacks and names what is wrong in a broken one", () => {
        const validate = new Ajv2020({ allErrors: true, strict: false }).compile(fleetJsonSchema());
        for (const stack of ["dev", "staging", "prod"]) assert.ok(validate(stackFleet(stack)), `${stack}: ${JSON.stringify(validate.errors)}`);

        const broken = structuredClone(stackFleet("dev")) as { nodes: Record<string, unknown>[]; hosts: Record<string, Record<string, unknown>> };
        broken.nodes[0]!.rle = "storage";
        const host = Object.keys(broken.hosts)[0]!;
        broken.hosts[host]!.port = 70000;
        assert.equal(validate(broken), false);
        const said = (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message}`);
        assert.ok(said.some((m) => m.startsWith(`/hosts/${host}/port must be <= 65535`)), said.join("\n"));
        assert.ok((validate.errors ?? []).some((e) => e.instancePath === "/nodes/0" && e.params && (e.params as { additionalProperty?: string }).additionalProperty === "rle"), said.join("\n"));
    });
});
