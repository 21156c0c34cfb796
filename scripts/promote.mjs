#!/usr/bin/env node
// Promotes node software from one stack to the next as its own reviewable change. A release is
// what it is, not where a stack keeps it: its name, its version and its sha256 (and the archive's
// file name). Those move from Pulumi.<from>.yaml into Pulumi.<to>.yaml (or, for a stack whose fleet
// is in a file, `nodefleet:fleetFile`, into that file); where the target fetches the archive from
// stays the target's own: the file under its `releaseMirror`, or its own URL with the new file
// name. Only those values change in the target file; its comments, order and everything else stay
// as they are. A digest given in the source as a SHA256SUMS file is resolved and written inline
// (the next stack must not depend on a file on this machine). With --sequencer-version, the Aztec
// sequencer version of same-named nodes moves too.
//
// Refused, naming the value, and nothing written: an address the target's hosts cannot reach
// (loopback, link-local, the lab's networks, a private range the target does not list in
// `privateMirrorCidrs`), a release marked `simulator: true` (the lab's), a value that is not what
// its field holds.
//
//   node scripts/promote.mjs <from> <to> [release ...] [--sequencer-version]
//   (no release names and no --sequencer-version: every release the two stacks both define)
import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { isMap, isScalar, parseDocument } from "yaml";
import { unreachableReason } from "./lib/addresses.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const INLINE = ["config", "nodefleet:fleet"];
const FLEET_FILE = ["config", "nodefleet:fleetFile"];

function fail(message) {
    console.error(`promote: ${message}`);
    process.exit(1);
}

function parsed(file) {
    const text = fs.readFileSync(file, "utf8");
    const doc = parseDocument(text);
    if (doc.errors.length) fail(`${path.relative(ROOT, file)}: ${doc.errors[0].message}`);
    return { text, doc };
}

/** A stack's fleet, where it is written: the stack file's config (at ["config", "nodefleet:fleet"]) or its fleet file (at []). */
function load(stack) {
    const stackFile = path.join(ROOT, `Pulumi.${stack}.yaml`);
    if (!fs.existsSync(stackFile)) fail(`${path.basename(stackFile)}: no such stack file`);
    const { text, doc } = parsed(stackFile);
    const fleetFile = doc.getIn(FLEET_FILE);
    if (fleetFile !== undefined) {
        if (doc.hasIn(INLINE)) fail(`${path.basename(stackFile)}: both nodefleet:fleet and nodefleet:fleetFile are set`);
        // The program's own rule (components/config/definition.ts): a relative path inside the project.
        const rel = String(fleetFile);
        if (path.isAbsolute(rel) || path.normalize(rel).startsWith("..")) fail(`${path.basename(stackFile)}: nodefleet:fleetFile: not a path inside the project`);
        const file = path.join(ROOT, rel);
        if (!fs.existsSync(file)) fail(`${path.basename(stackFile)}: nodefleet:fleetFile: ${rel} does not exist`);
        return { file, ...parsed(file), at: [], edits: [] };
    }
    if (!doc.hasIn(INLINE)) fail(`${path.basename(stackFile)}: no config.nodefleet:fleet (or nodefleet:fleetFile)`);
    return { file: stackFile, doc, text, at: INLINE, edits: [] };
}

function digest(stack, name, rel) {
    if (rel.sha256) return rel.sha256;
    if (!rel.sha256File) fail(`${stack}: releases.${name}: neither sha256 nor sha256File`);
    if (typeof rel.url !== "string") fail(`${stack}: releases.${name}: its URL is held in a secret, so its line in sha256File cannot be looked up here: give its sha256 inline`);
    const sums = path.resolve(ROOT, rel.sha256File);
    if (!fs.existsSync(sums)) fail(`${stack}: releases.${name}.sha256File: ${rel.sha256File} does not exist (build it first)`);
    const base = new URL(rel.url).pathname.split("/").pop();
    const line = fs.readFileSync(sums, "utf8").split("\n").find((l) => l.trim().split(/\s+\*?/)[1] === base);
    if (!line) fail(`${stack}: releases.${name}.sha256File: ${rel.sha256File} lists no ${base}`);
    return line.trim().split(/\s+/)[0];
}

/** A plain scalar where YAML allows one, else a double-quoted string. */
function scalarText(value) {
    const plain = String(value);
    return /^[A-Za-z0-9][A-Za-z0-9._\/:@+-]*$/.test(plain) && !/^(true|false|null|~|[0-9.eE+-]+)$/i.test(plain) ? plain : JSON.stringify(plain);
}

/** Replaces one scalar's text in place (its comment, indentation and quoting style around it stay). */
function setScalar(stack, at, value) {
    const node = stack.doc.getIn(at, true);
    if (!isScalar(node) || !node.range) fail(`${path.basename(stack.file)}: ${at.slice(stack.at.length).join(".")} is not a plain value`);
    stack.edits.push({ start: node.range[0], end: node.range[1], text: scalarText(value) });
}


/** Renames a key of a map and replaces its value (sha256File: <path> -> sha256: <digest>). */
function renameKey(stack, mapAt, oldKey, newKey, value) {
    const map = stack.doc.getIn(mapAt, true);
    const pair = isMap(map) ? map.items.find((p) => isScalar(p.key) && p.key.value === oldKey) : undefined;
    if (!pair?.key.range || !pair.value?.range) fail(`${path.basename(stack.file)}: ${mapAt.slice(stack.at.length).join(".")}.${oldKey} not found`);
    stack.edits.push({ start: pair.key.range[0], end: pair.key.range[1], text: newKey });
    stack.edits.push({ start: pair.value.range[0], end: pair.value.range[1], text: scalarText(value) });
}

const args = process.argv.slice(2);
const flags = new Set(args.filter((a) => a.startsWith("--")));
for (const f of flags) if (f !== "--sequencer-version") fail(`unknown option ${f}`);
const [from, to, ...names] = args.filter((a) => !a.startsWith("--"));
if (!from || !to) fail("usage: node scripts/promote.mjs <from> <to> [release ...] [--sequencer-version]");
if (from === to) fail("from and to are the same stack");

const source = load(from);
const target = load(to);
// Two stacks reading one fleet file run the same software by definition: nothing to promote between them.
if (source.file === target.file) fail(`${from} and ${to} read the same fleet file (${path.relative(ROOT, source.file)}): give each stack its own to promote between them`);
const sourceFleet = source.doc.getIn(source.at)?.toJSON() ?? {};
const srcReleases = source.doc.getIn([...source.at, "releases"])?.toJSON() ?? {};
const dstReleases = target.doc.getIn([...target.at, "releases"])?.toJSON() ?? {};
const chosen = names.length || flags.has("--sequencer-version") ? names : Object.keys(srcReleases).filter((n) => n in dstReleases);
const changes = [];
const VERSION = /^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$/;
const FILE = /^[A-Za-z0-9][A-Za-z0-9._+-]{0,126}\.tar\.gz$/;
const targetFleet = target.doc.getIn(target.at)?.toJSON() ?? {};
const allowed = Array.isArray(targetFleet.privateMirrorCidrs) ? targetFleet.privateMirrorCidrs.map(String) : [];
/** A URL's last path segment, decoded, or undefined for text that is no URL. */
function fileOf(url) {
    try {
        return decodeURIComponent(new URL(url).pathname.split("/").pop() ?? "");
    } catch {
        return undefined;
    }
}
/** A URL the target's hosts would fetch from: refused, naming it, where they cannot reach it. */
function reachable(where, url) {
    const why = unreachableReason(url, allowed);
    if (why) fail(`${to}: ${where}: ${JSON.stringify(url)} ${why}: the target's hosts cannot fetch from it (set the target's own releaseMirror, or list its private range in privateMirrorCidrs)`);
}
/** Sets a release's key: its value replaced, or a new line added after the release's last key. */
function setOrAdd(at, key, value) {
    if (target.doc.hasIn([...at, key])) return setScalar(target, [...at, key], value);
    const map = target.doc.getIn(at, true);
    const last = isMap(map) ? map.items[map.items.length - 1] : undefined;
    if (!last?.value?.range || !last.key?.range) fail(`${path.basename(target.file)}: ${at.slice(target.at.length).join(".")}: not a map of plain values`);
    const lineStart = target.text.lastIndexOf("\n", last.key.range[0]) + 1;
    const indent = target.text.slice(lineStart, last.key.range[0]);
    if (!/^ *$/.test(indent)) fail(`${path.basename(target.file)}: ${at.slice(target.at.length).join(".")}: write it in block style to promote into it`);
    const lineEnd = target.text.indexOf("\n", last.value.range[1]);
    const pos = lineEnd < 0 ? target.text.length : lineEnd;
    target.edits.push({ start: pos, end: pos, text: `\n${indent}${key}: ${scalarText(value)}` });
}
if (target.doc.hasIn([...target.at, "releaseMirror"])) reachable("releaseMirror", String(target.doc.getIn([...target.at, "releaseMirror"])));
for (const name of chosen) {
    if (!(name in srcReleases)) fail(`${from}: defines no release ${name}`);
    if (!(name in dstReleases)) fail(`${to}: defines no release ${name} (add it by hand first: which hosts install it is a design change, not a promotion)`);
    const src = srcReleases[name];
    const dst = dstReleases[name];
    if (src.simulator === true) fail(`${from}: releases.${name} carries a simulator (simulator: true): it never leaves the lab's dev stack`);
    if (dst.simulator === true) fail(`${to}: releases.${name} is marked simulator: true: only the dev stack runs simulators`);
    const srcUrl = src.url ?? (typeof src.file === "string" && typeof sourceFleet.releaseMirror === "string" ? `${sourceFleet.releaseMirror}${src.file}` : undefined);
    if (srcUrl === undefined) fail(`${from}: releases.${name}: neither url nor file under a releaseMirror`);
    // The archive's file name: the source's file, or its URL's last segment (a secret URL's is unknown here).
    const file = typeof src.file === "string" ? src.file : typeof srcUrl === "string" ? fileOf(srcUrl) : undefined;
    if (file !== undefined && !FILE.test(file)) fail(`${from}: releases.${name}: the archive's file name ${JSON.stringify(file)} is not a file name ending in .tar.gz`);
    const version = src.version;
    if (version !== undefined && (typeof version !== "string" || !VERSION.test(version))) fail(`${from}: releases.${name}.version: ${JSON.stringify(version)} is not a version (letters, digits, '.', '_', '+', '-')`);
    const sha256 = digest(from, name, { ...src, url: srcUrl });
    if (typeof sha256 !== "string" || !/^[0-9a-f]{64}$/.test(sha256)) fail(`${from}: releases.${name}: ${JSON.stringify(sha256)} is not a sha256`);
    const at = [...target.at, "releases", name];
    if (dst.file !== undefined) {
        if (file === undefined) fail(`releases.${name}: ${from} holds its URL in a secret, so its file name is unknown here: give ${from} the release as a file under its releaseMirror`);
        if (typeof targetFleet.releaseMirror !== "string") fail(`${to}: releases.${name}.file: ${to} names no releaseMirror`);
        reachable(`releases.${name}`, `${targetFleet.releaseMirror}${file}`);
        if (dst.file !== file) { setScalar(target, [...at, "file"], file); changes.push(`releases.${name}.file: ${dst.file} -> ${file}`); }
    } else if (typeof dst.url === "string") {
        // The target's own location, with the new archive's name: never the source's address.
        if (file === undefined) fail(`releases.${name}: ${from} holds its URL in a secret, so its file name is unknown here: give ${to} a secret URL too, or both stacks a releaseMirror`);
        const next = new URL(dst.url);
        const dir = next.pathname.slice(0, next.pathname.lastIndexOf("/") + 1);
        next.pathname = `${dir}${encodeURIComponent(file)}`;
        const url = next.toString();
        reachable(`releases.${name}.url`, url);
        if (url !== dst.url) { setScalar(target, [...at, "url"], url); changes.push(`releases.${name}.url: ${dst.url} -> ${url}`); }
    } else if (typeof src.url !== "object" || JSON.stringify(dst.url) !== JSON.stringify(src.url)) {
        // A URL held in a secret: each stack keeps its own secret's value (encrypted with its own key);
        // promote carries the digest and version only, and both stacks must name their secret alike.
        fail(`releases.${name}.url: held in a secret in ${to} and not alike in ${from}: give both {secret: <name>} and set each stack's value (pulumi config set --secret <name> --stack <stack>)`);
    }
    if (dst.sha256 !== undefined) {
        if (dst.sha256 !== sha256) { setScalar(target, [...at, "sha256"], sha256); changes.push(`releases.${name}.sha256: ${dst.sha256} -> ${sha256}`); }
    } else {
        renameKey(target, at, "sha256File", "sha256", sha256);
        changes.push(`releases.${name}.sha256File -> sha256: ${sha256} (the digest is inline)`);
    }
    if (version !== undefined && String(dst.version) !== String(version)) {
        setOrAdd(at, "version", String(version));
        changes.push(`releases.${name}.version: ${dst.version ?? "(none)"} -> ${version}`);
    }
}
if (flags.has("--sequencer-version")) {
    const srcNodes = source.doc.getIn([...source.at, "nodes"])?.toJSON() ?? [];
    const dstNodes = target.doc.getIn([...target.at, "nodes"]);
    dstNodes?.items.forEach((item, i) => {
        const node = item.toJSON();
        // A sequencer's settings are its node's `sequencer:` section (no other node has one).
        const from_ = srcNodes.find((n) => n.name === node.name && n.sequencer !== undefined);
        if (node.sequencer === undefined || !from_?.sequencer?.version) return;
        if (from_.sequencer.version === "latest") fail(`${from}: ${node.name}: sequencer.version is 'latest', not a version: pin it before promoting`);
        if (node.sequencer.version !== from_.sequencer.version) {
            if (node.sequencer.version === undefined) fail(`${to}: ${node.name}: no sequencer.version line to change (add one by hand first)`);
            // Another major version reads other flags and registers another way (its own settings): not a one-line change.
            const major = (v) => String(v).split(".")[0];
            if (major(node.sequencer.version) !== major(from_.sequencer.version))
                fail(`${to}: ${node.name}: sequencer.version ${node.sequencer.version} -> ${from_.sequencer.version} changes the sequencer's settings (see docs/configuration.md): edit ${to} by hand`);
            setScalar(target, [...target.at, "nodes", i, "sequencer", "version"], from_.sequencer.version);
            changes.push(`nodes[${i}] ${node.name}: sequencer.version ${node.sequencer.version ?? "(default)"} -> ${from_.sequencer.version}`);
        }
    });
}
if (!changes.length) {
    console.log(`promote: ${to} already runs what ${from} runs: nothing to change`);
    process.exit(0);
}
// The edits, spliced into the original text from the end so earlier offsets stay valid.
let out = target.text;
for (const e of target.edits.sort((a, b) => b.start - a.start)) out = out.slice(0, e.start) + e.text + out.slice(e.end);
if (parseDocument(out).errors.length) fail(`internal: the edited ${path.basename(target.file)} does not parse; nothing written`);
fs.writeFileSync(target.file, out);
console.log(`promote: ${from} -> ${to}, in ${path.relative(ROOT, target.file)} only:`);
for (const c of changes) console.log(`  ${c}`);
