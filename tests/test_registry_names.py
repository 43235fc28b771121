"""No routing policy, algorithm or failure class is told apart by its NAME outside its registry (issue 26 item 1).

Code outside ``topo/routing/__init__.py``, ``collectives/algorithms.py`` and ``topo/failures.py``
asks a record for a property (``policy_of(G).tier_rule``, ``ALGORITHM_RECORDS[a].order``,
``failure_class(c).never_kept``); comparing a name (``== "dor"``, ``in ("ring", "pairwise")``) puts
knowledge of one policy in a file no registry points to, and a new policy would not be seen there.

The scan reads the AST (so comments, docstrings, messages and ``click.Choice`` lists are not
comparisons and pass) and flags a comparison (``==``, ``!=``, ``in``, ``not in``, a ``match`` case)
against a registered name, where the name is written as a literal, a tuple / list / set of literals,
a literal sum (``"d" + "or"``) or a module constant bound to one of those:

* routing policy names anywhere, and any comparison of ``G.graph["routing"]`` / ``.get("routing")``
  itself, whatever it is compared to;
* algorithm names anywhere in ``collectives/`` and ``cli.py`` (``topo/`` draws "ring" sides), and
  anywhere against an operand whose identifiers say ``algo``;
* failure-class names where an operand's identifiers say ``cls`` / ``class`` / ``failure`` / ``spec``
  (the class names ``chip``, ``rack``, ``rail`` ... are also node kinds and labels, compared
  legitimately everywhere), the names no graph vocabulary shares (``lanes``, ``switch-tray``)
  anywhere, and ``.startswith`` / ``.endswith`` with a family's suffix (``"-switch"``).

``ALLOWED`` lists today's offenders in files other helpers own, so it cannot grow: a new one fails
the test, and a fixed one must be removed (a stale entry fails too).
"""
from __future__ import annotations

import ast
import functools
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REGISTRY = {"routing": "topo/routing/__init__.py", "algorithm": "collectives/algorithms.py",
            "failure class": "topo/failures.py"}
# (file, kind, the flagged expression as ast.unparse writes it): shrink it, never grow it
ALLOWED: set[tuple[str, str, str]] = set()     # empty: every name test lives in its registry
ALGO_WORDS = ("algo",)
CLASS_WORDS = ("cls", "class", "failure", "spec")


@functools.cache
def registered() -> dict[str, frozenset]:
    from fabricsim.collectives.algorithms import ALGORITHM_RECORDS
    from fabricsim.topo.failures import FAILURE_CLASSES
    from fabricsim.topo.routing import POLICIES
    return {"routing": frozenset(POLICIES), "algorithm": frozenset(ALGORITHM_RECORDS),
            "failure class": frozenset(n for n in FAILURE_CLASSES if not n.startswith("*")),
            "family suffix": frozenset(n[1:] for n in FAILURE_CLASSES if n.startswith("*"))}


# failure-class names that are no node kind, label or tag: a comparison with them is a class test
_GRAPH_WORDS = {"node", "link"}


def _strings(node, consts: dict) -> list[str]:
    """The string values an expression spells out: a literal, a collection or sum of them, a module constant."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [s for e in node.elts for s in _strings(e, consts)]
    if isinstance(node, ast.Name) and node.id in consts:
        return consts[node.id]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        a, b = _strings(node.left, consts), _strings(node.right, consts)
        if len(a) == 1 and len(b) == 1:
            return [a[0] + b[0]]
    return []


def _words(node) -> str:
    """The identifiers an expression reads (names and attributes), lower-case, joined."""
    out = []
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            out.append(n.id)
        elif isinstance(n, ast.Attribute):
            out.append(n.attr)
        elif isinstance(n, ast.arg):
            out.append(n.arg)
    return " ".join(out).lower()


def _reads_routing(node) -> bool:
    """``X["routing"]`` or ``X.get("routing", ...)`` inside ``node``."""
    for n in ast.walk(node):
        if isinstance(n, ast.Subscript) and isinstance(n.slice, ast.Constant) and n.slice.value == "routing":
            return True
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "get" and n.args \
                and isinstance(n.args[0], ast.Constant) and n.args[0].value == "routing":
            return True
    return False


def name_tests(rel: str, source: str) -> set[tuple[str, str, str]]:
    """Every (file, kind, expression) of ``source`` that tells a registered thing apart by name."""
    names = registered()
    tree = ast.parse(source, rel)
    consts = {}
    for n in tree.body:
        if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
            got = _strings(n.value, {})
            if got:
                consts[n.targets[0].id] = got
    algo_scope = rel.startswith("collectives/") or rel == "cli.py"
    found = set()

    def check(node, operands):
        text = ast.unparse(node)
        lits = {s for x in operands for s in _strings(x, consts)}
        words = " ".join(_words(x) for x in operands)
        kinds = []
        if lits & names["routing"] or any(_reads_routing(x) for x in operands):
            kinds.append("routing")
        if lits & names["algorithm"] and (algo_scope or any(w in words for w in ALGO_WORDS)):
            kinds.append("algorithm")
        fc = lits & names["failure class"]
        if fc and (any(w in words for w in CLASS_WORDS) or fc - _GRAPH_WORDS - _graph_vocabulary()):
            kinds.append("failure class")
        for k in kinds:
            if rel != REGISTRY[k]:
                found.add((rel, k, text))

    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and any(isinstance(o, (ast.Eq, ast.NotEq, ast.In, ast.NotIn))
                                                 for o in node.ops):
            check(node, [node.left, *node.comparators])
        elif isinstance(node, ast.Match):
            pats = [p for c in node.cases for p in ast.walk(c.pattern) if isinstance(p, ast.MatchValue)]
            for p in pats:
                check(node.subject, [node.subject, p.value])
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr in ("startswith", "endswith"):
            if {s for a in node.args for s in _strings(a, consts)} & names["family suffix"] and \
                    rel != REGISTRY["failure class"]:
                found.add((rel, "failure class", ast.unparse(node)))
    return found


@functools.cache
def _graph_vocabulary() -> frozenset:
    """Words a graph uses for other things (node kinds, roles, tags and labels): class names among
    them are compared legitimately."""
    from fabricsim.topo.contract import CHIP, DOMAIN_TAGS, SWITCH
    from fabricsim.topo.failures import EDGE_TAG_CLASSES, NODE_TAG_CLASSES
    return frozenset({CHIP, SWITCH, *DOMAIN_TAGS, *NODE_TAG_CLASSES, *EDGE_TAG_CLASSES, "tray"})


def _sources():
    for cli in ("cli.py",):                                         # the command line
        yield cli, ROOT / cli
    for pkg in ("topo", "collectives", "fabrics"):
        for path in sorted((ROOT / pkg).rglob("*.py")):
            yield path.relative_to(ROOT).as_posix(), path


@functools.cache
def found_all() -> frozenset:
    out = set()
    for rel, path in _sources():
        out |= name_tests(rel, path.read_text())
    return frozenset(out)


def test_no_name_is_compared_outside_its_registry():
    new = found_all() - ALLOWED
    assert not new, "ask the registry's record for a property instead of comparing a name: " + "; ".join(
        f"{f}: {k} {e}" for f, k, e in sorted(new))


def test_allow_list_has_no_stale_entry():
    stale = ALLOWED - found_all()
    assert not stale, "fixed, so remove from ALLOWED: " + "; ".join(f"{f}: {e}" for f, k, e in sorted(stale))


def test_the_scan_sees_each_form():
    """Every form above is found on a probe, and the legitimate look-alikes are not (so the tests can fail)."""
    src = '''
DOR = "dor"
RINGS = ("ring", "pairwise")
def f(G, algorithm, cls, side, d, spec, a):
    """Routing "dor" == "dor" in a docstring is prose."""
    if G.graph.get("routing", "ecmp") == DOR: pass
    if G.graph["routing"] in allowed: pass
    if algorithm in RINGS: pass
    if "halving" + "-doubling" == a: pass
    if cls.endswith("-switch"): pass
    if spec.cls == "rack": pass
    if x == "lanes": pass
    match algorithm:
        case "nvls": pass
    click.Choice(["ring", "direct", "dor"])
    if d["kind"] == "chip" and "rack" in d: pass
    print(f"policy {DOR!r}")
'''
    got = {(k, e) for _, k, e in name_tests("collectives/probe.py", src)}
    assert got == {
        ("routing", "G.graph.get('routing', 'ecmp') == DOR"), ("routing", "G.graph['routing'] in allowed"),
        ("algorithm", "algorithm in RINGS"), ("algorithm", "'halving' + '-doubling' == a"),
        ("failure class", "cls.endswith('-switch')"), ("failure class", "spec.cls == 'rack'"),
        ("failure class", "x == 'lanes'"), ("algorithm", "algorithm")}
    # topo draws ring-shaped frames: an algorithm name there is a test only against an algorithm operand
    assert name_tests("topo/draw/probe.py", "if side == 'ring': pass\nif algo == 'ring': pass\n") == {
        ("topo/draw/probe.py", "algorithm", "algo == 'ring'")}
    # the registry module itself may compare its own names
    assert not name_tests("topo/routing/__init__.py", "if r == 'dor': pass\n")
