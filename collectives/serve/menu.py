"""Published serving menus: the decode configurations and concurrencies a benchmark actually ran.

``serve(..., menu="inferencex")`` takes its meshes and concurrencies from ``inferencex.toml``
(SemiAnalysis InferenceX's own search spaces, cited there) instead of searching every TP x EP
mesh and every power-of-two concurrency, so the model's peak tokens/s per kW and its min TBT are
taken over the same runs as the published figures they are compared with.  A run of ``w``
decode workers at total concurrency ``c`` is priced as one worker at ``ceil(c / w)`` sequences
(the busiest worker), rounded to the nearest multiple of the mesh's TP groups (serve splits
sequences evenly over them).
"""
from __future__ import annotations

import math
from functools import lru_cache
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python < 3.11
    import tomli as tomllib

from ...topo.errors import BadInput
from ..placement import parse_mesh

__all__ = ["MENUS", "menu_runs", "per_worker"]

MENUS = ("search", "inferencex")
_FILE = Path(__file__).with_name("inferencex.toml")


@lru_cache(maxsize=1)
def _data() -> dict:
    with open(_FILE, "rb") as fh:
        return tomllib.load(fh)


def per_worker(conc: int, workers: int, mesh: dict[str, int]) -> int:
    """Sequences one worker of ``mesh`` serves when ``workers`` of them share ``conc`` users: the busiest
    worker's ``ceil(conc / workers)``, to the nearest multiple of the mesh's TP groups (at least one each).

    >>> per_worker(5, 4, {"tp": 8}), per_worker(666, 1, {"tp": 1, "ep": 32}), per_worker(3228, 3, {"tp": 1, "ep": 4})
    (2, 672, 1076)
    """
    groups = math.prod(mesh.values()) // mesh.get("tp", 1)
    c = -(-conc // workers)
    return max(groups, int(math.floor(c / groups + 0.5)) * groups)


def menu_runs(menu: str, model: str, accelerator: str, mtp: int) -> tuple[str, list[tuple[dict, int]]]:
    """``(entry, [(mesh, sequences per worker), ...])`` of ``menu`` for the model on the accelerator
    (``mtp > 0``: the speculative-decoding runs)."""
    if menu not in MENUS:
        raise BadInput(f"--menu {menu!r}; choose one of: {', '.join(MENUS)}")
    data = _data()
    table = data.get(model, {}).get(accelerator)
    if table is not None and mtp:
        table = table.get("mtp")
    if table is None:
        have = sorted(f"{m} on {a}{' (and MTP)' if 'mtp' in t else ''}" for m, accs in data.items()
                      for a, t in accs.items())
        raise BadInput(f"--menu {menu}: InferenceX published no {'MTP ' if mtp else ''}runs of {model} on "
                       f"{accelerator} that the menu lists; it has: {', '.join(have)}")
    out = []
    for run in table["runs"]:
        mesh = parse_mesh(run["mesh"])
        for c in run["conc"]:
            out.append((mesh, per_worker(int(c), int(run["workers"]), mesh)))
    return table["entry"], out
