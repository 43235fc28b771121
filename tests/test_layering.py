"""No private name crosses the top-level packages (issue 26 item 2).

``topo``, ``collectives``, ``fabrics`` and ``cli`` talk through public names only: a module of one
package may not import ``_name`` from another (``from ..topo.solver import _Fill``), nor reach a
private attribute of a module it imported from another (``failures._Index``), nor import a private
module of another (``topo._solver_kernels``). The import layering itself is import-linter's job
(``lint-imports``, contracts in pyproject.toml); this test covers what import-linter cannot see.

``ALLOWED`` is today's offenders, written out so the list cannot grow: a new crossing fails the test,
and a fixed one must be removed from the list (the test fails on a stale entry too).
"""
from __future__ import annotations

import ast
import functools
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("topo", "collectives", "fabrics", "cli")

# (module, "package.module:name") of each private crossing kept for now; shrink it, never grow it
# (each in a file another helper owned when the list was written: whatif/, routing/, fabrics/)
ALLOWED: set[tuple[str, str]] = set()


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _modules():
    for cli in ("cli",):                                 # the command line (the owner's one top-level module)
        yield cli, ROOT / f"{cli}.py"
    for pkg in PACKAGES[:-1]:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            yield ".".join(path.relative_to(ROOT).with_suffix("").parts), path


def _absolute(module: str, path: Path, node: ast.ImportFrom) -> str:
    """The dotted target of an import, without the ``fabricsim.`` prefix ('' for the root, None if outside)."""
    if node.level == 0:
        name = node.module or ""
        return name[len("fabricsim."):] if name.startswith("fabricsim.") else ("" if name == "fabricsim" else None)
    parts = module.split(".")[:-1]                     # the package the module is in (also for __init__)
    base = parts[:len(parts) - (node.level - 1)] if node.level > 1 else parts
    return ".".join(base + ([node.module] if node.module else []))


def _crossings_in(module: str, path: Path, source: str) -> set[tuple[str, str]]:
    """The private names one module's source reaches in other top-level packages."""
    home = module.split(".")[0]
    found = set()
    tree = ast.parse(source, str(path))
    aliases = {}                                     # local name -> foreign module or object it is bound to
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            target = _absolute(module, path, node)
            if target is None:
                continue
            for a in node.names:
                full = f"{target}.{a.name}" if target else a.name
                if full.split(".")[0] == home:
                    continue
                if target and any(_private(p) for p in target.split(".")):
                    found.add((module, f"{target}:*"))
                elif _private(a.name):
                    found.add((module, f"{target}:{a.name}"))
                else:
                    aliases[a.asname or a.name] = full
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("fabricsim.") and a.name.split(".")[1] != home:
                    aliases[a.asname or a.name.split(".")[0]] = a.asname and a.name[len("fabricsim."):] or ""
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            chain, root = [], node.value
            while isinstance(root, ast.Attribute):
                chain.append(root.attr)
                root = root.value
            if isinstance(root, ast.Name) and root.id in aliases:
                dotted = ".".join(p for p in [aliases[root.id], *reversed(chain)] if p)
                if dotted.split(".")[0] == "fabricsim":
                    dotted = dotted[len("fabricsim."):]
                if dotted.split(".")[0] != home:
                    found.add((module, f"{dotted}:{node.attr}"))
    return found


@functools.cache
def crossings() -> set[tuple[str, str]]:
    """Every private name a module reaches in another top-level package, as (module, "target:name")."""
    found = set()
    for module, path in _modules():
        found |= _crossings_in(module, path, path.read_text())
    return found


def test_no_new_private_name_crosses_packages():
    new = crossings() - ALLOWED
    assert not new, "private names used across packages (give them a public name): " + ", ".join(
        f"{m} -> {t}" for m, t in sorted(new))


def test_allow_list_has_no_stale_entry():
    stale = ALLOWED - crossings()
    assert not stale, "fixed, so remove from ALLOWED: " + ", ".join(f"{m} -> {t}" for m, t in sorted(stale))


def test_the_check_sees_each_form():
    """The walker finds every form on a probe module (so the tests above can fail)."""
    path = ROOT / "collectives" / "probe.py"
    src = ("from ..topo.solver import _Fill\n"
           "from ..topo import failures\n"
           "from .. import topo\n"
           "import fabricsim.fabrics.registry as reg\n"
           "from ..topo._solver_kernels import fill\n"
           "from .engine import _finite\n"                     # same package: allowed
           "def f():\n"
           "    return failures._Index, topo.routing._x, reg._describe\n")
    assert _crossings_in("collectives.probe", path, src) == {
        ("collectives.probe", "topo.solver:_Fill"), ("collectives.probe", "topo.failures:_Index"),
        ("collectives.probe", "topo.routing:_x"), ("collectives.probe", "fabrics.registry:_describe"),
        ("collectives.probe", "topo._solver_kernels:*")}
