"""The host tools import in layers: no module of hostfiles/ (the zgvalidator package included)
imports another that imports it back, directly or through others (docs/development.md, Layers)."""
import os
import re
import unittest

HOSTFILES = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# `from X import a, b as c` (or parenthesized over lines) and `import X.Y as Z, W`, at any indent: an
# import inside a function closes a circle as surely as one at the top.
IMPORT = re.compile(r"^\s*(?:from\s+(\.*[\w.]*)\s+import\s+(\([^)]*\)|[^\n#]+)|import\s+([^\n#;]+))", re.M)


def imported_names(clause):
    """The module-level names of an import list: `a, b as c` -> [a, b]."""
    return [part.split()[0] for part in clause.strip("() \n").replace("\n", " ").split(",") if part.strip()]


def modules():
    """{module name: source} of every host tool (scripts' dashes read as underscores)."""
    found = {}
    for top, dirs, files in os.walk(HOSTFILES):
        dirs[:] = [d for d in dirs if d not in ("tests", "tests_real", "__pycache__")]
        for f in files:
            if f.endswith(".py"):
                rel = os.path.relpath(os.path.join(top, f), HOSTFILES)[:-3]
                with open(os.path.join(top, f), encoding="utf-8") as fh:
                    found[rel.replace("/", ".").replace("-", "_")] = fh.read()
    return found


def graph(sources):
    """{module: the project modules it imports}."""
    names = set(sources)
    edges = {}
    for name, source in sources.items():
        package = name.rsplit(".", 1)[0] if "." in name else ""
        deps = set()
        for m in IMPORT.finditer(source):
            if m.group(3):
                targets = imported_names(m.group(3))
            elif m.group(1).strip(".") == "":
                targets = [f"{package}.{x}".strip(".") for x in imported_names(m.group(2))]
            elif m.group(1).startswith("."):
                targets = [f"{package}.{m.group(1).lstrip('.')}".strip(".")]
            else:
                targets = [m.group(1)]
            for t in targets:
                hit = next((c for c in (t, t.split(".")[0]) if c in names and c != name), None)
                if hit:
                    deps.add(hit)
        edges[name] = deps
    return edges


def circles(edges):
    """Every circle found, each as the modules around it."""
    state, found = {}, []

    def visit(node, path):
        state[node] = "open"
        path.append(node)
        for dep in sorted(edges.get(node, ())):
            if state.get(dep) == "open":
                found.append(path[path.index(dep):] + [dep])
            elif dep not in state:
                visit(dep, path)
        path.pop()
        state[node] = "done"

    for node in sorted(edges):
        if node not in state:
            visit(node, [])
    return found


class TestImports(unittest.TestCase):
    def test_the_host_tools_import_in_no_circle(self):
        edges = graph(modules())
        self.assertIn("nodefleet_checks", edges["nodefleet_metrics"], "the graph is read (a known import)")
        self.assertEqual(circles(edges), [])

    def test_a_circle_is_found_and_named(self):
        sources = {"a": "import b\n", "b": "from c import x\n", "c": "import a\n", "d": "import a\n"}
        self.assertEqual(circles(graph(sources)), [["a", "b", "c", "a"]])

    def test_a_circle_through_an_aliased_or_late_import_is_found(self):
        # A package module importing a sibling under another name, and the sibling importing it back
        # inside a function (the shape switch.py and lowdowntime.py once had).
        sources = {
            "p.a": "x = 1\nfrom . import b as _b  # noqa: E402\n",
            "p.b": "def f():\n    from .a import x\n    return x\n",
            "p.c": "from . import (\n    a,\n    b as _b,\n)\n",
            "q": "import os, p.a as pa\nimport p.b\n",
        }
        edges = graph(sources)
        self.assertEqual(edges["p.c"], {"p.a", "p.b"})
        self.assertEqual(edges["q"], {"p.a", "p.b"})
        self.assertEqual(circles(edges), [["p.a", "p.b", "p.a"]])


if __name__ == "__main__":
    unittest.main()
