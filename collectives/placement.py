"""Placements: which chips form each collective group.

A placement returns a tuple of groups, each a tuple of chip ranks.  All groups of
the chosen dimension run at once, so the pricing sees the contention between them.
Rank-order placements (packed, spread, random) read only the ranks; ``slice`` reads the
graph (a torus's ring positions, or the chips' domain attributes); ``auto`` prices
packed and slice and keeps the cheaper (:func:`auto_place`).
"""
from __future__ import annotations

import json
from collections import Counter
import math
import re
from pathlib import Path
from dataclasses import dataclass, field
from itertools import product
from typing import Any, Callable, Sequence

import networkx as nx
import numpy as np

from ..topo.contract import CHIP, KIND, RANK
from ..topo.errors import BadInput, close_matches
from ..topo.inputs import read_input_text

__all__ = ["PLACEMENTS", "MESH_ORDER", "DOMAIN_LEVELS", "chip_ranks", "by_size", "by_mesh", "from_file",
           "check_groups", "parse_mesh", "parse_placement", "slice_groups", "slice_shape", "auto_place",
           "AutoPlacement"]

PLACEMENTS = ("packed", "spread", "random", "slice", "auto")
# Chip attributes naming a fabric's domains, coarse to fine (the catalog's contract): a
# Virgo superpod, a Boardfly group, a rack (a Jalapeño rack, an NVL72 rack, a rail-cluster
# node's chassis), a TPU cube, a Boardfly board, a tray (an NVL72 compute tray, an 8-GPU
# node).  A finer level's value is read together with the coarser ones (tray 3 of rack 1).
DOMAIN_LEVELS = ("superpod", "group", "rack", "cube", "board", "tray")
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
    """``packed`` | ``spread`` | ``random`` | ``random:SEED`` | ``slice`` | ``auto`` -> (strategy, seed)."""
    name, sep, seed = spec.partition(":")
    if name not in PLACEMENTS:
        raise BadInput(f"unknown placement {spec!r}; choose one of: packed, spread, random[:seed], slice, auto",
                       param="placement")
    if name != "random" and sep:
        raise BadInput(f"placement {spec!r}: {name} takes no seed (only random:SEED does)", param="placement")
    if sep and not seed.strip().isdigit():
        # numpy seeds are non-negative integers; "random:" with nothing after it is a typo
        raise BadInput(f"random placement seed {seed!r} is not an integer >= 0 (e.g. random:7)", param="placement")
    return name, (int(seed) if seed else (0 if name == "random" else None))


def by_size(G: nx.Graph, group_size: int, placement: str = "packed", *,
            count: int | None = None) -> tuple[tuple[int, ...], ...]:
    """Split the fabric's chips into groups of ``group_size``.

    With ``count``, only the first ``count`` groups are kept (the other chips stay idle),
    and ``group_size`` need not divide the chip count: the same work on fabrics of
    different sizes.

    packed: consecutive ranks (a TP group in one tray, then one rack ...);
    spread: group g takes ranks g, g + N/size, g + 2N/size ... (across racks);
    random[:seed]: a seeded permutation, then packed;
    slice: compact boxes on a torus, whole fast domains elsewhere (:func:`slice_groups`).
    auto prices its candidates and so is not a rule of the graph alone: :func:`auto_place`.
    """
    n = _n_chips(G)
    if group_size < 2:
        raise BadInput(f"group size {group_size} must be at least 2", param="group_size")
    if group_size > n:
        raise BadInput(f"group size {group_size} is larger than the {n:,} chips of "
                       f"{G.graph.get('name', 'this fabric')!r}", param="group_size")
    if count is not None and not 1 <= count <= n // max(group_size, 1):
        raise BadInput(f"count {count} groups of {group_size} do not fit the {n:,} chips of "
                       f"{G.graph.get('name', 'this fabric')!r}; at most {n // max(group_size, 1)}", param="count")
    if count is None and n % group_size:
        raise BadInput(f"group size {group_size} does not divide the {n:,} chips of "
                       f"{G.graph.get('name', 'this fabric')!r}; divisors near it: "
                       f"{', '.join(map(str, _near_divisors(n, group_size)))}; or price one group of "
                       f"{group_size} with --count 1 (count=1 in the library; up to {n // group_size} fit)",
                       param="group_size")
    strategy, seed = parse_placement(placement)
    if strategy == "auto":
        raise BadInput("placement auto prices its candidates (packed, slice) and keeps the cheapest: "
                       "it needs a collective and a size (placement.auto_place; price, compare, whatif, sweep)")
    if strategy == "slice":
        return slice_groups(G, group_size, count=count)
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
                       f"{G.graph.get('name', 'the fabric')!r} has {n:,}", param="mesh")
    if over not in mesh:
        raise BadInput(f"--over {over!r} is not a mesh dimension; choose one of: {', '.join(mesh)}", param="over")
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
    text = read_input_text(path, "a JSON groups file")
    try:
        data = json.loads(text)
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


# ----------------------------------------------------------------------------- slice (issue 24)
_AXES = ("x", "y", "z", "w")     # the torus builder's ring-position attributes, dims[0] first


def _torus_dims(G: nx.Graph) -> tuple[int, ...] | None:
    """Ring lengths of a torus fabric (graph attribute ``dims``, e.g. "16x24x24"), else None."""
    dims = G.graph.get("dims")
    if not isinstance(dims, str):
        return None
    try:
        out = tuple(int(k) for k in dims.split("x"))
    except ValueError:
        return None
    return out if 1 <= len(out) <= len(_AXES) and all(k >= 1 for k in out) else None


def _leaving_links(shape: Sequence[int], dims: Sequence[int]) -> int:
    """Links leaving one box of ``shape`` on a torus of ``dims`` (its surface in links).

    Along an axis whose side is the whole ring the box has no faces: the wraparound link
    closes the ring inside the box.  Otherwise each of the two faces has one link per chip.
    """
    total = 0
    for i, (a, k) in enumerate(zip(shape, dims)):
        if a != k:
            total += 2 * math.prod(s for j, s in enumerate(shape) if j != i)
    return total


def _ring_time(shape: Sequence[int], dims: Sequence[int]) -> float:
    """Per-chip time of a reduce-scatter over one box, in units of S / (link rate), as
    ``torus-concurrent`` schedules it: a shard per axis of extent >= 2 (share
    w_i = k_i / (k_i - 1)), stage j running shard i on axis i + j, each ring
    bidirectional (half its stage's data each way), a stage as long as its slowest ring.

    A ring whose side is the whole ring length (or a ring of 2, one bundle) runs at the
    link rate; an open side closes its ring back over k - 1 hops, so every link of the
    line carries two flows each way: half the rate.  Contention between boxes is left out
    (an open ring's return stays inside its box while k - 1 <= L - k + 1).

    >>> round(1 / _ring_time((4, 4, 4), (16, 24, 24)), 3), round(1 / _ring_time((4, 4, 1), (4, 4, 4)), 3)
    (3.048, 4.267)
    """
    ax = [(a, k) for a, k in zip(shape, dims) if a >= 2]
    if not ax:
        return math.inf
    ext = [a for a, _ in ax]
    rate = [1.0 if (a == k or k == 2) else 0.5 for a, k in ax]
    w = [a / (a - 1) for a in ext]
    data = [x / sum(w) for x in w]
    t = 0.0
    for j in range(len(ext)):
        on = [(i + j) % len(ext) for i in range(len(ext))]
        t += max(data[i] * (ext[a] - 1) / ext[a] / 2 / rate[a] for i, a in enumerate(on))
        data = [data[i] / ext[a] for i, a in enumerate(on)]
    return t


def slice_shape(dims: Sequence[int], group_size: int) -> tuple[int, ...] | None:
    """The most compact box of ``group_size`` chips that tiles a torus of ``dims``, or None.

    A box's side along each axis divides that ring's length (so equal boxes tile the
    torus, as TPU slices are cut from whole cubes).  Among those boxes the rule is, in order:

    1. the shortest ring time :func:`_ring_time`: the box's own ``torus-concurrent``
       schedule in closed form.  It weighs both things that make a box fast: compact
       (more axes of extent >= 2 carry a shard each, shorter rings move more per link) and
       closed (a side spanning the whole ring closes over its wraparound link: full rate;
       an open side's return runs back over the line: half rate);
    2. fewest links leaving the box (:func:`_leaving_links`, its surface; a whole-ring side
       has no faces): less traffic of other groups can share its links;
    3. the largest smallest side, then the shape itself (lexicographically largest:
       longer sides on the slower axes), for a fixed answer.

    Neither surface nor the smallest side alone ranks boxes as the pricing does: on a
    4x4x4 torus 16-chip boxes 4x4x1 and 4x2x2 both leave 32 links, but the 4x4x1 slab
    closes two whole rings and prices at busbw 359.7 GB/s against 266.5 (all-reduce,
    1 GiB, torus-concurrent), while 64-chip boxes on 8x12x12 prefer the 4x4x4 cube
    (269.8) to the 8x4x2 slab with a whole 8-ring (258.8) at the same 96 leaving links.
    The closed form ranks every shape priced so far as the pricing does, to 0.1%: 8 chips
    on 4x4x4 (2x2x2 269.8 vs 1x2x4 190.8), 64 on Ironwood (4x4x4 269.8 vs 2x4x8 201.3), 64
    on 8x12x12 (also 8x2x4 213.2).  Any divisor of the chip count has such a box (per prime,
    its exponent splits over the axes), so None means ``group_size`` does not divide the chips.

    Examples
    --------
    >>> slice_shape((16, 24, 24), 64), slice_shape((4, 4, 4), 8), slice_shape((4, 4, 4), 16)
    ((4, 4, 4), (2, 2, 2), (4, 4, 1))
    """
    best, best_key = None, None
    for shape in product(*([a for a in range(1, k + 1) if k % a == 0] for k in dims)):
        if math.prod(shape) != group_size:
            continue
        sides = [a for a, k in zip(shape, dims) if k > 1] or [1]
        key = (round(_ring_time(shape, dims), 12), _leaving_links(shape, dims), -min(sides),
               tuple(-a for a in shape))
        if best_key is None or key < best_key:
            best, best_key = tuple(shape), key
    return best


def _snake(shape: Sequence[int]) -> np.ndarray:
    """Box positions (rows of ``len(shape)`` coordinates) in boustrophedon order.

    Consecutive positions differ by one step on one axis, so a ring in this order runs
    over the box's own links (all but its closing step); each axis reverses whenever the
    row-major index of the positions before it is odd.
    """
    idx = np.stack(np.unravel_index(np.arange(math.prod(shape)), tuple(shape)), axis=1)
    out = idx.copy()
    for k in range(1, len(shape)):
        outer = np.ravel_multi_index(tuple(idx[:, :k].T), tuple(shape[:k]))
        out[:, k] = np.where(outer % 2 == 1, shape[k] - 1 - idx[:, k], idx[:, k])
    return out


def _torus_slices(G: nx.Graph, dims: tuple[int, ...], group_size: int,
                  count: int | None) -> tuple[tuple[int, ...], ...]:
    n = math.prod(dims)
    shape = slice_shape(dims, group_size)
    if shape is None:
        raise BadInput(f"slice: no box of {group_size} chips tiles the {'x'.join(map(str, dims))} torus of "
                       f"{G.graph.get('name', 'this fabric')!r} (a box's sides divide the ring lengths, so its size "
                       f"divides the {n:,} chips); valid group sizes near it: "
                       f"{', '.join(map(str, _near_divisors(n, group_size)))}; or price one group of "
                       f"{group_size} with --count 1 (count=1 in the library; up to {n // group_size} fit)")
    axes = _AXES[:len(dims)]
    rank_at = np.full(dims, -1, dtype=np.int64)
    for _, d in G.nodes(data=True):
        if d.get(KIND) == CHIP:
            rank_at[tuple(int(d[a]) for a in axes)] = d[RANK]
    if (rank_at < 0).any():
        missing = tuple(int(v) for v in np.argwhere(rank_at < 0)[0])
        raise BadInput(f"slice: the torus has no chip at {missing}; place groups on the intact fabric")
    local = _snake(shape)                                           # (group_size, axes)
    origins = np.stack(np.unravel_index(np.arange(n // group_size), tuple(k // a for k, a in zip(dims, shape))),
                       axis=1) * np.asarray(shape)                  # box corners, row-major
    if count is not None:
        origins = origins[:count]
    coords = origins[:, None, :] + local[None, :, :]                # (groups, members, axes)
    groups = rank_at[tuple(coords[..., i] for i in range(len(dims)))]
    return tuple(tuple(int(r) for r in g) for g in groups)


def _sort_key(v: Any) -> tuple:
    """Domain labels sort as numbers where they are numbers (tray 2 before tray 10)."""
    return (0, v, "") if isinstance(v, (int, np.integer)) and not isinstance(v, bool) else (1, 0, str(v))


def _domain_levels(G: nx.Graph) -> list[tuple[str, dict[int, tuple], int]]:
    """(level, rank -> domain key, chips per domain) for each level every chip names, coarse to fine.

    A level whose domains differ in size is left out (no equal groups could respect it).
    """
    chips = [d for _, d in G.nodes(data=True) if d.get(KIND) == CHIP]
    levels, prefix = [], []
    for level in DOMAIN_LEVELS:
        if not chips or any(level not in d for d in chips):
            continue
        prefix.append(level)
        keys = {d[RANK]: tuple(_sort_key(d[k]) for k in prefix) for d in chips}
        sizes = set(Counter(keys.values()).values())
        if len(sizes) == 1:
            levels.append((level, keys, sizes.pop()))
    return levels


def _domain_slices(G: nx.Graph, group_size: int, count: int | None) -> tuple[tuple[int, ...], ...]:
    name = G.graph.get("name", "this fabric")
    levels = _domain_levels(G)
    if not levels:
        raise BadInput(f"slice: {name!r} is no torus (graph attribute dims, chips with x, y, z) and its chips "
                       f"name no domain of equal size ({', '.join(DOMAIN_LEVELS)}); use packed")
    n = _n_chips(G)

    def fits(g: int) -> bool:
        return all(d % g == 0 or g % d == 0 for _, _, d in levels)

    if not fits(group_size):
        level, _, d = next((lv, k, d) for lv, k, d in levels if d % group_size and group_size % d)
        valid = [g for g in range(2, n + 1) if n % g == 0 and fits(g)]
        raise BadInput(f"slice: group size {group_size} neither divides nor fills whole {d}-chip {level}s of "
                       f"{name!r}, so a group would split one; valid group sizes: "
                       f"{', '.join(map(str, sorted(valid, key=lambda g: (abs(g - group_size), g))[:6]))}")
    ranks = chip_ranks(G)
    # whole domains in order (coarse to fine), ranks in order inside each
    order = sorted(ranks.tolist(), key=lambda r: (tuple(keys[r] for _, keys, _ in levels), r))
    usable = (len(order) // group_size) * group_size
    groups = np.asarray(order[:usable], dtype=np.int64).reshape(-1, group_size)
    if count is not None:
        groups = groups[:count]
    return tuple(tuple(int(r) for r in g) for g in groups)


def slice_groups(G: nx.Graph, group_size: int, *, count: int | None = None) -> tuple[tuple[int, ...], ...]:
    """Groups that are whole compact pieces of the fabric.

    On a torus (graph attribute ``dims``, chips with ``x``, ``y``, ``z`` ...): equal boxes of
    :func:`slice_shape`, corner at multiples of the box's sides (so Ironwood's 4x4x4 slices
    are its cubes), in row-major order of their corners; each group's members in a snake
    order (:func:`_snake`), so ``ring`` steps run over direct links.  ``torus-rings``,
    ``torus-concurrent`` and ``ring-linked`` order the members themselves from the box.

    Elsewhere: chips sorted by their domains (:data:`DOMAIN_LEVELS`: the levels every chip
    names whose domains are equal in size) and then by rank, cut into consecutive groups:
    a group stays inside one domain of every level at least its size and holds whole
    domains of every level smaller, which needs ``group_size`` to divide or be a multiple
    of each domain size (else a one-line BadInput naming the sizes that do).
    """
    dims = _torus_dims(G)
    if dims is not None and all(all(a in d for a in _AXES[:len(dims)])
                                for _, d in G.nodes(data=True) if d.get(KIND) == CHIP):
        return _torus_slices(G, dims, group_size, count)
    return _domain_slices(G, group_size, count)


# ----------------------------------------------------------------------------- auto (issue 24)
@dataclass(frozen=True)
class AutoPlacement:
    """What ``--placement auto`` chose.

    Attributes
    ----------
    placement : str
        The placement kept (``packed`` or ``slice``).
    groups : tuple of tuple of int
        Its groups.
    result : Any
        What ``price`` returned for them (a CostReport for the CLI's price).
    times_s : dict
        Priced candidate -> its time in seconds.
    skipped : dict
        Candidate left out -> why (no such placement here, or the same groups as one priced).
    """

    placement: str
    groups: tuple
    result: Any = field(repr=False)
    times_s: dict
    skipped: dict

    @property
    def note(self) -> str:
        """What auto chose and why; empty when there was no choice (one candidate priced)."""
        if len(self.times_s) <= 1:
            return ""
        priced = ", ".join(f"{k} {v * 1e6:,.1f} us" for k, v in sorted(self.times_s.items(), key=lambda kv: kv[1]))
        skipped = "".join(f"; {k} not priced: {why}" for k, why in self.skipped.items())
        return f"placement auto picked {self.placement}: {priced}{skipped}"


def auto_place(G: nx.Graph, group_size: int, price: Callable[[tuple], Any], *,
               count: int | None = None) -> AutoPlacement:
    """Price the candidate placements (packed, slice) and keep the cheapest.

    ``price(groups)`` returns an object with ``time_s`` (a CostReport).  Only candidates
    whose groups differ as sets of chips are priced: the algorithms that care about the
    order inside a group (ring-linked, torus-rings, torus-concurrent) order the members
    themselves, so a placement that only reorders packed's groups adds nothing.  A
    candidate that cannot be cut here (slice on a fabric without a torus or equal
    domains, a size no domain divides) is skipped with its one-line reason.  Ties keep
    packed (the rank order the user's launcher gives).
    """
    candidates = {"packed": by_size(G, group_size, "packed", count=count)}
    skipped: dict[str, str] = {}
    try:
        sliced = by_size(G, group_size, "slice", count=count)
    except BadInput as exc:
        skipped["slice"] = str(exc).removeprefix("slice: ")
    else:
        if {frozenset(g) for g in sliced} == {frozenset(g) for g in candidates["packed"]}:
            skipped["slice"] = "the same groups as packed"
        else:
            candidates["slice"] = sliced
    results = {name: price(groups) for name, groups in candidates.items()}
    best = min(results, key=lambda k: results[k].time_s)     # dict order: packed first wins ties
    return AutoPlacement(placement=best, groups=candidates[best], result=results[best],
                         times_s={k: float(r.time_s) for k, r in results.items()}, skipped=skipped)
