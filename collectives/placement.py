"""Placements: which chips form each collective group.

A placement returns a tuple of groups, each a tuple of chip ranks.  All groups of
the chosen dimension run at once, so the pricing sees the contention between them.
"""
from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Sequence

import networkx as nx
import numpy as np

from ..topo.contract import CHIP, KIND, RANK
from ..topo.errors import BadInput, close_matches

__all__ = ["PLACEMENTS", "MESH_ORDER", "chip_ranks", "by_size", "by_mesh", "from_file", "check_groups", "parse_mesh",
           "parse_placement"]

PLACEMENTS = ("packed", "spread", "random")
# Megatron-Core lays its process groups out with tensor parallel innermost, then
# context, expert, data and pipeline parallel; names not listed follow in the order given.
MESH_ORDER = ("tp", "cp", "ep", "dp", "pp")


def chip_ranks(G: nx.Graph) -> np.ndarray:
    """Ranks of the chips present in ``G`` (a degraded graph may have gaps), sorted."""
    return np.array(sorted(d[RANK] for _, d in G.nodes(data=True) if d.get(KIND) == CHIP), dtype=np.int64)


def _n_chips(G: nx.Graph) -> int:
    """Chip count of the intact fabric: ranks run 0..N-1 there, so max rank + 1."""
    r = chip_ranks(G)
    return int(r.max()) + 1 if len(r) else 0


def parse_placement(spec: str) -> tuple[str, int | None]:
    """``packed`` | ``spread`` | ``random`` | ``random:SEED`` -> (strategy, seed)."""
    name, sep, seed = spec.partition(":")
    if name not in PLACEMENTS:
        raise BadInput(f"unknown placement {spec!r}; choose one of: packed, spread, random[:seed]")
    if name != "random" and sep:
        raise BadInput(f"placement {spec!r}: {name} takes no seed (only random:SEED does)")
    if sep and not seed.strip().isdigit():
        # numpy seeds are non-negative integers; "random:" with nothing after it is a typo
        raise BadInput(f"random placement seed {seed!r} is not an integer >= 0 (e.g. random:7)")
    return name, (int(seed) if seed else (0 if name == "random" else None))


def by_size(G: nx.Graph, group_size: int, placement: str = "packed", *,
            count: int | None = None) -> tuple[tuple[int, ...], ...]:
    """Split the fabric's chips into groups of ``group_size``.

    With ``count``, only the first ``count`` groups are kept (the other chips stay idle),
    and ``group_size`` need not divide the chip count: the same work on fabrics of
    different sizes.

    packed: consecutive ranks (a TP group in one tray, then one rack ...);
    spread: group g takes ranks g, g + N/size, g + 2N/size ... (across racks);
    random[:seed]: a seeded permutation, then packed.
    """
    n = _n_chips(G)
    if group_size < 2:
        raise BadInput(f"group size {group_size} must be at least 2")
    if group_size > n:
        raise BadInput(f"group size {group_size} is larger than the {n:,} chips of "
                       f"{G.graph.get('name', 'this fabric')!r}")
    if count is not None and not 1 <= count <= n // max(group_size, 1):
        raise BadInput(f"count {count} groups of {group_size} do not fit the {n:,} chips of "
                       f"{G.graph.get('name', 'this fabric')!r}; at most {n // max(group_size, 1)}")
    if count is None and n % group_size:
        raise BadInput(f"group size {group_size} does not divide the {n:,} chips of "
                       f"{G.graph.get('name', 'this fabric')!r}; divisors near it: "
                       f"{', '.join(map(str, _near_divisors(n, group_size)))}")
    strategy, seed = parse_placement(placement)
    ranks = np.arange(n)
    if strategy == "random":
        order = np.random.default_rng(seed).permutation(n)
    else:
        order = ranks
    if strategy == "spread":
        # stride by the number of groups, so each group spans the fabric
        order = ranks.reshape(group_size, n // group_size).T.ravel() if n % group_size == 0 else \
            ranks[: n - n % group_size].reshape(group_size, -1).T.ravel()
    usable = (n // group_size) * group_size
    groups = order[:usable].reshape(n // group_size, group_size)
    if count is not None:
        groups = groups[:count]
    return tuple(tuple(int(r) for r in g) for g in groups)


def _near_divisors(n: int, k: int) -> list[int]:
    divs = [d for d in range(2, n + 1) if n % d == 0]
    return sorted(divs, key=lambda d: (abs(d - k), d))[:4]


def parse_mesh(spec: str) -> dict[str, int]:
    """``tp=8,ep=32,dp=8`` -> {"tp": 8, "ep": 32, "dp": 8}."""
    out: dict[str, int] = {}
    for part in filter(None, (p.strip() for p in spec.split(","))):
        m = re.fullmatch(r"([a-z]+)=(\d+)", part)
        if not m:
            raise BadInput(f"mesh entry {part!r} is not name=integer (e.g. tp=8,ep=32,dp=8)")
        if m[1] in out:
            raise BadInput(f"mesh dimension {m[1]!r} given twice")
        if int(m[2]) < 1:
            raise BadInput(f"mesh dimension {m[1]}={m[2]} must be at least 1")
        out[m[1]] = int(m[2])
    if not out:
        raise BadInput("empty mesh; give dimensions like tp=8,ep=32,dp=8")
    return out


def by_mesh(G: nx.Graph, mesh: dict[str, int], over: str) -> tuple[tuple[int, ...], ...]:
    """Groups of the mesh dimension ``over``, the mesh laid over ranks with ``tp`` innermost.

    Dimensions are ordered as in Megatron-Core (tp, cp, ep, dp, pp; others after, in
    the order given); the first varies fastest over consecutive ranks.
    """
    n = _n_chips(G)
    total = math.prod(mesh.values())   # Python ints: numpy's int64 product wraps on huge entries
    if total != n:
        raise BadInput(f"mesh {','.join(f'{k}={v}' for k, v in mesh.items())} covers {total:,} chips but "
                       f"{G.graph.get('name', 'the fabric')!r} has {n:,}")
    if over not in mesh:
        raise BadInput(f"--over {over!r} is not a mesh dimension; choose one of: {', '.join(mesh)}")
    names = [k for k in MESH_ORDER if k in mesh] + [k for k in mesh if k not in MESH_ORDER]
    # rank = sum_i coord_i * stride_i, first name fastest; reshape in C order needs slowest first
    shape = [mesh[k] for k in reversed(names)]
    grid = np.arange(n).reshape(shape)
    axis = len(names) - 1 - names.index(over)
    groups = np.moveaxis(grid, axis, -1).reshape(-1, mesh[over])
    if mesh[over] < 2:
        raise BadInput(f"mesh dimension {over}={mesh[over]} has groups of one chip: nothing to communicate")
    return tuple(tuple(int(r) for r in g) for g in groups)


def from_file(G: nx.Graph, path: str | Path) -> tuple[tuple[int, ...], ...]:
    """Groups from a JSON file: a list of lists of chips, each a rank or a node id."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise BadInput(f"{path}: cannot read groups file ({exc.strerror})") from None
    except UnicodeDecodeError as exc:
        raise BadInput(f"{path}: byte {exc.start}: not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise BadInput(f"{path}: line {exc.lineno}: not JSON ({exc.msg})") from None
    except RecursionError:
        raise BadInput(f"{path}: nested too deeply to be a groups file (a list of lists)") from None
    if not isinstance(data, list) or not data or not all(isinstance(g, list) for g in data):
        raise BadInput(f"{path}: expected a JSON list of groups, each a list of chip ranks or ids")
    return check_groups(G, data, where=str(path))


def check_groups(G: nx.Graph, data: Sequence[Sequence], where: str | None = None) -> tuple[tuple[int, ...], ...]:
    """Groups as given (lists of chip ranks or node ids) -> rank tuples, checked.

    Every chip must exist, every group hold 2+ chips and no chip appear twice (in
    one group or in two): a chip belongs to one group of a collective.  ``where``
    (a file name, say) starts each error message.  :func:`from_file` (``price
    --groups``) and ``mix``'s inline ``groups`` both check by this.
    """
    at = f"{where}: " if where else ""
    by_id = {str(n): d[RANK] for n, d in G.nodes(data=True) if d.get(KIND) == CHIP}
    valid = set(by_id.values())
    seen: dict[int, int] = {}
    groups = []
    for gi, g in enumerate(data):
        if len(g) < 2:
            raise BadInput(f"{at}group {gi} has {len(g)} chip(s); a collective needs at least 2")
        out = []
        for c in g:
            if isinstance(c, int) and not isinstance(c, bool):
                r = c
                if r not in valid:
                    raise BadInput(f"{at}group {gi}: chip rank {r} does not exist (ranks 0..{max(valid)})")
            elif isinstance(c, str) and c in by_id:
                r = by_id[c]
            else:
                raise BadInput(f"{at}group {gi}: unknown chip {c!r}{close_matches(str(c), by_id)}")
            if r in seen:
                what = f"chip rank {r}" if isinstance(c, int) else f"chip {c!r}"
                if seen[r] == gi:
                    raise BadInput(f"{at}group {gi} lists {what} twice")
                raise BadInput(f"{at}{what} appears twice (groups {seen[r]} and {gi})")
            seen[r] = gi
            out.append(int(r))
        groups.append(tuple(out))
    return tuple(groups)


def describe_groups(groups: Sequence[Sequence[int]]) -> str:
    sizes = {len(g) for g in groups}
    size = f"{sizes.pop()}" if len(sizes) == 1 else "mixed sizes"
    return f"{len(groups):,} groups of {size}"
