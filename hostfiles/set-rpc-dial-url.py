#!/usr/bin/env python3
"""Set rpc-dial-url in a 0gchaind app.toml, changing that one value and nothing else (docs/spec.md §4.5 step 12).

    set-rpc-dial-url.py <app.toml> <url> [--dry-run]

Looks for the key under [beacon-kit.engine] (or at top level when the file has no such table),
replaces only its quoted value and keeps every other byte of the file: other lines, comments,
spacing, a comment after the value, line endings. Refuses, naming file, line and reason, when the
key is missing, the file is not TOML, or the value is not a one-line TOML string. Writes a temporary
file beside the original with its mode and owner, checks that it parses as TOML with the new
value, then renames it over the original. Prints one JSON line: {"file", "old", "new", "changed"}.
Exit 0: done (or nothing to do); 1: refused, file untouched.
"""
import json
import os
import re
import sys
import tomllib

SECTION = "beacon-kit.engine"
KEY = "rpc-dial-url"
TABLE = re.compile(r"^\s*\[\s*([^\[\]]+?)\s*\]\s*(#.*)?$")
ASSIGN = re.compile(r"""^(\s*(?:"rpc-dial-url"|'rpc-dial-url'|rpc-dial-url)\s*=\s*)("(?:[^"\\\r\n]|\\.)*"|'[^'\r\n]*')(\s*(?:#.*)?)$""")
KEY_LINE = re.compile(r"""^\s*(?:"rpc-dial-url"|'rpc-dial-url'|rpc-dial-url)\s*=""")


class Refused(Exception):
    pass


def toml_string(value):
    out = '"'
    for ch in value:
        if ch in '"\\':
            out += "\\" + ch
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out += f"\\u{ord(ch):04x}"
        else:
            out += ch
    return out + '"'


def lookup(doc):
    node = doc
    for part in SECTION.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    if isinstance(node, dict) and KEY in node:
        return node[KEY]
    return doc.get(KEY)


def edit(path, text, url):
    lines = text.splitlines(keepends=True)
    has_section = any((m := TABLE.match(line.rstrip("\r\n"))) and m.group(1).replace('"', "") == SECTION for line in lines)
    table = ""
    hits = []
    for i, line in enumerate(lines):
        body = line.rstrip("\r\n")
        m = TABLE.match(body)
        if m and not body.lstrip().startswith("[["):
            table = m.group(1).replace('"', "")
            continue
        if KEY_LINE.match(body) and table == (SECTION if has_section else ""):
            hits.append(i)
    # The caller has parsed the file as TOML, which allows a key once per table: at most one hit.
    if not hits:
        where = f"[{SECTION}]" if has_section else "the top level"
        raise Refused(f"{path}: no {KEY} under {where}; nothing was changed (is this the consensus daemon's app.toml?)")
    i = hits[0]
    body = lines[i].rstrip("\r\n")
    ending = lines[i][len(body):]
    m = ASSIGN.match(body)
    if not m:
        raise Refused(f"{path}:{i + 1}: the value of {KEY} is not a one-line TOML string; nothing was changed")
    lines[i] = m.group(1) + toml_string(url) + m.group(3) + ending
    return "".join(lines), i + 1


def main(argv):
    args = [a for a in argv[1:] if a != "--dry-run"]
    if len(args) != 2:
        print(__doc__, file=sys.stderr)
        return 64
    path, url = args
    try:
        if not re.fullmatch(r"https?://[^\s\"'\\]+", url):
            raise Refused(f"{url!r} is not an http(s) URL")
        try:
            with open(path, "rb") as f:
                raw = f.read()
            text = raw.decode("utf-8")
            old = lookup(tomllib.loads(text))
        except OSError as e:
            raise Refused(f"{path}: cannot read: {e.strerror}") from None
        except (UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
            raise Refused(f"{path}: not valid TOML: {e}; nothing was changed") from None
        new_text, line = edit(path, text, url)
        if lookup(tomllib.loads(new_text)) != url:
            raise Refused(f"{path}:{line}: the edited file does not read back {KEY} = {url!r}; nothing was changed")
        changed = new_text != text
        if changed and "--dry-run" not in argv:
            st = os.stat(path)
            tmp = path + ".nodefleet-new"
            with open(tmp, "w", encoding="utf-8", newline="") as f:
                f.write(new_text)
            os.chmod(tmp, st.st_mode & 0o7777)
            if os.geteuid() == 0:
                os.chown(tmp, st.st_uid, st.st_gid)
            os.replace(tmp, path)
    except Refused as e:
        print(f"set-rpc-dial-url: {e}", file=sys.stderr)
        return 1
    print(json.dumps({"file": path, "old": old, "new": url, "changed": changed, "line": line}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
