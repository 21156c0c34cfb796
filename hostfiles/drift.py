#!/usr/bin/env python3
"""nodefleet's drift check of a host: what nodefleet last applied, compared with the host, read-only.

Sent on stdin over SSH (python3 -S -, as root) when Pulumi refreshes the host's HostDrift resource.
Each step that puts something on the host records it under /var/lib/nodefleet/drift/<group>/, one
file an entry, a line of tab-separated fields:

    file  PATH  SHA256  MODE OWNER:GROUP    the file as the step left it
    unit  NAME                              the unit is enabled and running
    nft   TABLE  SHA256                     `nft list table TABLE` as the firewall step confirmed it
    tree  DIR  LINK                         a release: DIR/.nodefleet-files.sha256 holds its files'
                                            digests; LINK points at DIR
    toml  PATH  KEY  SHA256                 a value nodefleet sets in a file it edits in place (the
                                            consensus home's app.toml and config.toml): KEY is its
                                            dotted path (tables, then the key), SHA256 that of the
                                            value as JSON; the rest of the file is the operator's

A group's directory may carry a "+part" suffix (written by another tool of the same step). Prints
one JSON object: {"records": N, "drift": [{"group", "item", "change"}]}. A change names the file,
unit, table or release file and what differs: never a content or a digest.
"""
# nodefleet: the drift check (read-only)
import grp
import hashlib
import json
import os
import pwd
import subprocess
import sys

DIR = "/var/lib/nodefleet/drift"


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def check_file(path, digest, mode_owner):
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return "missing"
    except OSError as e:
        return f"cannot be read ({e.strerror})"
    changes = []
    try:
        if sha256(path) != digest:
            changes.append("content changed")
    except OSError as e:
        changes.append(f"cannot be read ({e.strerror})")
    mode, _, owner = mode_owner.partition(" ")
    now_mode = format(st.st_mode & 0o7777, "o")
    if now_mode != mode:
        changes.append(f"mode {now_mode}, nodefleet left {mode}")
    try:
        now_owner = f"{pwd.getpwuid(st.st_uid).pw_name}:{grp.getgrgid(st.st_gid).gr_name}"
    except KeyError:
        now_owner = f"{st.st_uid}:{st.st_gid}"
    if now_owner != owner:
        changes.append(f"owner {now_owner}, nodefleet left {owner}")
    return "; ".join(changes) or None


def value_digest(value):
    """The digest a `toml` record holds for a value: of its JSON, keys sorted (as the recorder writes it)."""
    return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def check_toml(path, key, digest):
    """A managed value of a file edited in place: changed, gone, or the file unreadable. Comments,
    other keys and layout are not nodefleet's and are not compared."""
    import tomllib  # here: a host without a TOML record never needs it
    try:
        with open(path, "rb") as f:
            doc = tomllib.load(f)
    except FileNotFoundError:
        return "missing"
    except OSError as e:
        return f"cannot be read ({e.strerror})"
    except tomllib.TOMLDecodeError:
        return f"is not TOML any more, so {key} cannot be read"
    value = doc
    for part in key.split("."):
        if not isinstance(value, dict) or part not in value:
            return f"{key} is gone (nodefleet sets it)"
        value = value[part]
    if value_digest(value) != digest:
        return f"{key} changed (nodefleet sets it)"
    return None


def unit_states(names):
    """systemctl show of the units, in the order asked (it answers a block each, in that order)."""
    if not names:
        return {}
    out = subprocess.run(["systemctl", "show", "-p", "Id,ActiveState,UnitFileState", "--", *names], capture_output=True, text=True).stdout
    blocks = [dict(line.split("=", 1) for line in block.splitlines() if "=" in line) for block in out.strip().split("\n\n")]
    return {name: (blocks[i] if i < len(blocks) else {}) for i, name in enumerate(names)}


def check_unit(state):
    changes = []
    enabled = state.get("UnitFileState", "")
    if enabled not in ("enabled", "enabled-runtime", "static", "generated"):
        changes.append(f"not enabled ({enabled or 'unknown'})")
    active = state.get("ActiveState", "")
    if active not in ("active", "activating", "reloading"):
        changes.append(f"not running ({active or 'unknown'})")
    return "; ".join(changes) or None


def check_nft(table, digest):
    r = subprocess.run(["nft", "list", "table", *table.split()], capture_output=True, text=True)
    if r.returncode != 0:
        return "missing (the firewall is not loaded)"
    if hashlib.sha256(r.stdout.encode()).hexdigest() != digest:
        return "differs from the ruleset nodefleet confirmed"
    return None


def check_tree(directory, link):
    """Each differing file of a release, then its link."""
    found = []
    listing = os.path.join(directory, ".nodefleet-files.sha256")
    try:
        with open(listing) as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        return [(directory, "missing (the release is not installed)")]
    for line in lines:
        digest, _, rel = line.partition("  ")
        path = os.path.join(directory, rel)
        try:
            if sha256(path) != digest:
                found.append((path, "differs from the release nodefleet installed"))
        except FileNotFoundError:
            found.append((path, "missing from the release nodefleet installed"))
        except OSError as e:
            found.append((path, f"cannot be read ({e.strerror})"))
    target = os.readlink(link) if os.path.islink(link) else None
    if target != directory:
        found.append((link, f"points at {target}, nodefleet left {directory}" if target else f"is not the link to {directory}"))
    return found


def main(argv):
    directory = argv[1] if len(argv) > 1 else DIR  # a test's; on a host it is sent with no argument
    drift, records = [], 0
    try:
        groups = sorted(os.listdir(directory))
    except FileNotFoundError:
        groups = []
    units = []
    for name in groups:
        group = name.split("+", 1)[0]
        base = os.path.join(directory, name)
        for entry in sorted(e for e in os.listdir(base) if not e.startswith(".")):
            with open(os.path.join(base, entry)) as f:
                fields = f.read().rstrip("\n").split("\t")
            records += 1
            kind = fields[0]
            if kind == "file" and len(fields) == 4:
                change = check_file(fields[1], fields[2], fields[3])
                if change:
                    drift.append({"group": group, "item": fields[1], "change": change})
            elif kind == "unit" and len(fields) == 2:
                units.append((group, fields[1]))
            elif kind == "nft" and len(fields) == 3:
                change = check_nft(fields[1], fields[2])
                if change:
                    drift.append({"group": group, "item": f"nftables table {fields[1]}", "change": change})
            elif kind == "toml" and len(fields) == 4:
                change = check_toml(fields[1], fields[2], fields[3])
                if change:
                    drift.append({"group": group, "item": fields[1], "change": change})
            elif kind == "tree" and len(fields) == 3:
                for item, change in check_tree(fields[1], fields[2]):
                    drift.append({"group": group, "item": item, "change": change})
            else:
                drift.append({"group": group, "item": os.path.join(base, entry), "change": "unreadable drift record"})
    states = unit_states([u for _, u in units])
    for group, unit in units:
        change = check_unit(states.get(unit, {}))
        if change:
            drift.append({"group": group, "item": f"unit {unit}", "change": change})
    print(json.dumps({"records": records, "drift": drift}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
