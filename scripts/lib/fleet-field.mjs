#!/usr/bin/env node
// One top-level field of a stack's fleet for the pipeline's shell steps, read where the fleet is
// written: Pulumi.<stack>.yaml's nodefleet:fleet, or the project file its nodefleet:fleetFile names
// (the program checks that file in full: components/config/definition.ts).
//   node scripts/lib/fleet-field.mjs STACK shards      the shards, space-separated
//   node scripts/lib/fleet-field.mjs STACK secretsDir  the secrets directory, `~/` expanded
//   node scripts/lib/fleet-field.mjs STACK fleetFile   the fleet file (relative to the project), if any
//   node scripts/lib/fleet-field.mjs STACK providers   the cloud providers its hosts need (aws, hcloud), space-separated
// Prints nothing when the field is unset.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { parse } from "yaml";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const [stack, field] = process.argv.slice(2);
if (!/^[a-z0-9-]+$/.test(stack ?? "") || !["shards", "secretsDir", "fleetFile", "providers"].includes(field)) {
    console.error("usage: fleet-field.mjs STACK shards|secretsDir|fleetFile|providers");
    process.exit(2);
}
const config = parse(fs.readFileSync(path.join(ROOT, `Pulumi.${stack}.yaml`), "utf8"))?.config ?? {};
const file = config["nodefleet:fleetFile"];
if (field === "fleetFile") {
    if (typeof file === "string") console.log(file);
    process.exit(0);
}
const fleet = typeof file === "string" ? parse(fs.readFileSync(path.join(ROOT, file), "utf8")) : config["nodefleet:fleet"];
// The provider plugin each kind of host is made with (components/hosts/aws.ts, hetzner.ts); existing servers need none.
const PROVIDER_OF_KIND = { aws: "aws", hetzner: "hcloud" };
if (field === "providers") {
    const hosts = fleet?.hosts && typeof fleet.hosts === "object" ? Object.values(fleet.hosts) : [];
    console.log([...new Set(hosts.map((h) => PROVIDER_OF_KIND[h?.kind]).filter(Boolean))].sort().join(" "));
    process.exit(0);
}
const value = fleet?.[field];
if (field === "shards" && Array.isArray(value)) console.log(value.filter((s) => /^[a-z0-9-]+$/.test(String(s))).join(" "));
if (field === "secretsDir" && typeof value === "string") console.log(value === "~" || value.startsWith("~/") ? path.join(os.homedir(), value.slice(1)) : path.resolve(ROOT, value));
