"""Audits: port, lane and bandwidth budgets, hop distances and bisection of a fabric graph.

Every figure is computed from the graph and the device catalog.  The checker
functions (:func:`budget_findings`, :func:`hop_stats`, :func:`bisection`) are
what the tests call and what users can call on their own graphs.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

import networkx as nx
import numpy as np
from scipy import sparse
from scipy.sparse import csgraph

from .text import fmt, table
from .contract import (CAPACITY_GBPS, CHIP, FORWARDS, KIND, LANE_GBPS, LANES, MEDIUM, MODEL, PORT_GBPS,
                       RANK, ROLE, SWITCH, TIER, asics_of, chips, forwarding_graph, params_of, validate)
from .devices import DEVICES, Device
from .errors import BadInput
from .parts import bill_of_materials

__all__ = ["Finding", "Audit", "audit", "budget_findings", "hop_stats", "HopStats", "bisection",
           "Bisection", "totals", "tier_levels", "chip_bandwidth"]


@dataclass(frozen=True)
class Finding:
    """One budget check on one element."""

    where: str          # node id or "u -- v"
    check: str          # "switch lanes", "lane rate", ...
    used: float
    available: float
    unit: str
    ok: bool
    note: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"where": self.where, "check": self.check, "used": self.used, "available": self.available,
                "unit": self.unit, "ok": self.ok, "note": self.note}


def _ports(e: dict) -> float:
    """Ports a bundle occupies at each end: lanes / lanes-per-port."""
    return e[LANES] / (e[PORT_GBPS] / e[LANE_GBPS])


def tier_levels(G: nx.Graph) -> dict[Any, int]:
    """Tier level of every node: chips 0, a switch 1 + the lowest level among its neighbours.

    Down links go to a lower level, up links to a higher one; this is how the audit
    tells a switch's down bandwidth from its up bandwidth without knowing the fabric.
    """
    level = {n: 0 for n, d in G.nodes(data=True) if d.get(KIND) == CHIP}
    frontier = list(level)
    while frontier:
        nxt = []
        for n in frontier:
            for m in G[n]:
                if m not in level:
                    level[m] = level[n] + 1
                    nxt.append(m)
        frontier = nxt
    for n in G:
        level.setdefault(n, 1)
    return level


def budget_findings(G: nx.Graph, *, devices: dict[str, Device] | None = None) -> list[Finding]:
    """Port, lane and bandwidth findings for every chip, switch and link of ``G``.

    Checks
    ------
    * ``lanes``: lanes wired against the device's SerDes lanes.
    * ``ports <speed>``: ports of each speed used against what the device offers at
      that speed once the lanes taken by the other speeds are set aside.
    * ``bandwidth``: Gb/s wired against the device's capacity (per direction); a
      switch with capacity left over gets a note saying how much is unused.
    * ``tier lanes <tier>``: a chip's lanes on a tier against its lanes for that tier.
    * ``down/up``: a switch's down bandwidth against its up bandwidth (the
      oversubscription) where it has both.
    * ``lane rate``: the fastest lane rate on a node's links against the lane rate the
      device supports (one check per chip and switch; a failure counts the links too fast
      and names one).

    Every check is made once per node (or per node and port speed / tier) whether it
    passes or fails, so the number of findings is a property of the graph's shape and
    devices, the same on every run: passing checks are never left out.
    """
    devices = DEVICES if devices is None else devices
    level = tier_levels(G)
    out: list[Finding] = []
    for n, d in G.nodes(data=True):
        dev = devices.get(d.get(MODEL))
        if dev is None:
            continue
        edges = [G.edges[n, m] for m in G[n]]
        lanes = sum(e[LANES] for e in edges)
        gbps = sum(e[CAPACITY_GBPS] for e in edges)
        out.append(Finding(str(n), f"{d[KIND]} lanes", lanes, dev.lanes, "lanes", lanes <= dev.lanes))
        by_speed: dict[float, list] = defaultdict(list)
        for e in edges:
            by_speed[e[PORT_GBPS]].append(e)
        for speed, es in sorted(by_speed.items()):
            used = sum(_ports(e) for e in es)
            other_lanes = lanes - sum(e[LANES] for e in es)
            lanes_per_port = speed / dev.lane_gbps
            avail = (dev.lanes - other_lanes) / lanes_per_port if lanes_per_port >= 1 else dev.lanes - other_lanes
            out.append(Finding(str(n), f"{d[KIND]} ports {speed / 1000:g}T", used, float(int(avail)), "ports",
                               used <= avail))
        note = ""
        if d[KIND] == SWITCH and gbps < dev.capacity_gbps and not dev.placeholder:
            spare = dev.capacity_gbps - gbps
            group = asics_of(d)
            note = (f"{spare / 1000:g} Tb/s ({spare / dev.capacity_gbps:.0%}) of the "
                    + ("switch" if group == 1 else f"{group} switches the node stands for") + " unused")
        out.append(Finding(str(n), f"{d[KIND]} bandwidth", gbps, dev.capacity_gbps, "Gb/s",
                           gbps <= dev.capacity_gbps * (1 + 1e-12), note))
        if d[KIND] == CHIP and dev.lanes_by_tier:
            per_tier = Counter()
            for e in edges:
                per_tier[e[TIER]] += e[LANES]
            for tier, used in sorted(per_tier.items()):
                avail = dev.lanes_by_tier.get(tier, 0)
                out.append(Finding(str(n), f"chip tier lanes {tier}", used, avail, "lanes", used <= avail,
                                   "" if avail else f"the device has no lanes for tier {tier!r}"))
        rates = [(e[LANE_GBPS], m) for m, e in zip(G[n], edges)]
        if rates:
            fast = [(r, m) for r, m in rates if r > dev.lane_gbps]
            top = max(r for r, _ in rates)
            out.append(Finding(str(n), "lane rate", top, dev.lane_gbps, "Gb/s per lane", not fast,
                               f"{len(fast):,} of its {len(rates):,} links run lanes faster than {dev.name}'s "
                               f"{dev.lane_gbps:g}G, e.g. {n} -- {fast[0][1]}" if fast else ""))
        if d[KIND] == SWITCH:
            down = sum(G.edges[n, m][CAPACITY_GBPS] for m in G[n] if level[m] < level[n])
            up = sum(G.edges[n, m][CAPACITY_GBPS] for m in G[n] if level[m] > level[n])
            if down and up:
                out.append(Finding(str(n), "switch down/up", down, up, "Gb/s", True,
                                   f"oversubscription {down / up:g}:1"))
            elif down and not up and d.get(ROLE) == "local":
                out.append(Finding(str(n), "switch down/up", down, 0.0, "Gb/s", True,
                                   "every port faces chips: zero uplinks"))
    return out


def totals(G: nx.Graph, *, devices: dict[str, Device] | None = None, nodes=None) -> dict[str, float]:
    """Counts and sums over ``nodes`` (all by default): chips, ASICs, pairs, optics, tier capacities.

    Switch counts are physical ASICs: a node with ``asics=k`` (a modelling group of k
    switches) counts k, and ``switch_nodes`` / ``<role>_switch_nodes`` give the node
    counts where they differ from the ASIC counts.

    An edge belongs to the set when either end does (a rack's optical uplinks count
    for the rack); differential pairs are two per lane (TX and RX).  ``chip_diff_pairs``
    counts each chip device's lanes, wired or not; for a placeholder device
    (``generic-chip``) it counts the lanes wired to the chip.
    """
    devices = DEVICES if devices is None else devices
    nodes = set(G) if nodes is None else set(nodes)
    chip_nodes = [n for n in nodes if G.nodes[n].get(KIND) == CHIP]
    sw_nodes = [n for n in nodes if G.nodes[n].get(KIND) == SWITCH]
    # a node may stand for several physical switches (``asics``): count ASICs, and give the
    # node count alongside only where the two differ
    asics = {n: asics_of(G.nodes[n]) for n in sw_nodes}
    t: dict[str, float] = {"chips": len(chip_nodes), "switch_asics": sum(asics.values())}
    if t["switch_asics"] != len(sw_nodes):
        t["switch_nodes"] = len(sw_nodes)
    # a chip's SerDes pairs: the device's lanes (wired or not); a placeholder device has no real
    # lane count, so its chips count the lanes actually wired to them
    chip_pairs = 0
    for n in chip_nodes:
        dev = devices.get(G.nodes[n][MODEL])
        if dev is not None:
            lanes = sum(G.edges[n, m][LANES] for m in G[n]) if dev.placeholder else dev.lanes
            chip_pairs += lanes * dev.pairs_per_lane
    t["chip_diff_pairs"] = chip_pairs
    copper_pairs = optical_links = optical_ports = optical_lanes = 0
    seen = set()
    for n in nodes:
        for m in G[n]:
            key = (n, m) if str(n) <= str(m) else (m, n)
            if key in seen:
                continue
            seen.add(key)
            e = G.edges[n, m]
            if e[MEDIUM] == "optical":
                optical_links += 1
                optical_lanes += e[LANES]
                # ports at the end(s) inside the set: a rack's uplinks count once for the rack
                optical_ports += _ports(e) * ((n in nodes) + (m in nodes))
            else:
                copper_pairs += 2 * e[LANES]
    t.update(copper_diff_pairs=copper_pairs, optical_links=optical_links, optical_lanes=optical_lanes,
             optical_ports=optical_ports)
    roles = Counter(G.nodes[n].get(ROLE) for n in sw_nodes)
    for role, count in sorted(roles.items()):
        role_asics = sum(asics[n] for n in sw_nodes if G.nodes[n].get(ROLE) == role)
        t[f"{role}_switches"] = role_asics
        if role_asics != count:
            t[f"{role}_switch_nodes"] = count
        cap = sum(devices[G.nodes[n][MODEL]].capacity_gbps for n in sw_nodes
                  if G.nodes[n].get(ROLE) == role and G.nodes[n][MODEL] in devices)
        t[f"{role}_switch_capacity_Tbps"] = cap / 1000
        used = sum(G.edges[n, m][CAPACITY_GBPS] for n in sw_nodes if G.nodes[n].get(ROLE) == role for m in G[n])
        t[f"{role}_switch_wired_Tbps"] = used / 1000
    demand = Counter()
    for n in chip_nodes:
        for m in G[n]:
            demand[G.edges[n, m][TIER]] += G.edges[n, m][CAPACITY_GBPS]
    for tier, gbps in sorted(demand.items()):
        t[f"{tier}_chip_bandwidth_Tbps"] = gbps / 1000
    # whole numbers print as whole numbers; Tb/s sums are rounded off float noise
    return {k: (int(v) if float(v).is_integer() else round(v, 9)) for k, v in t.items()}


def chip_bandwidth(G: nx.Graph) -> dict[str, float]:
    """Per-chip bandwidth: the smallest (and, where chips differ, the largest) sum of a chip's
    link capacities, per direction in GB/s, with the bidirectional TB/s vendors quote.

    Examples
    --------
    >>> from fabricsim.fabrics import build
    >>> chip_bandwidth(build("nvl72"))
    {'chip_bandwidth_GBps': 900.0, 'chip_bandwidth_bidir_TBps': 1.8}
    """
    per = [sum(G.edges[n, m][CAPACITY_GBPS] for m in G[n]) / 8.0
           for n, d in G.nodes(data=True) if d.get(KIND) == CHIP]
    if not per:
        return {}
    lo, hi = min(per), max(per)
    out = {"chip_bandwidth_GBps": round(lo, 9), "chip_bandwidth_bidir_TBps": round(2 * lo / 1000, 9)}
    if hi > lo * (1 + 1e-12):
        out["chip_bandwidth_max_GBps"] = round(hi, 9)
    return out


@dataclass(frozen=True)
class HopStats:
    """Hop counts (links traversed) between every ordered pair of distinct chips."""

    diameter_hops: int
    mean_hops: float
    histogram: dict[int, int]
    relay_pairs: int         # pairs reachable only by relaying through a chip (rail-only)
    unreachable_pairs: int


def _csr(H: nx.Graph, index: dict, *, out_from) -> sparse.csr_matrix:
    """Directed hop-weight matrix with arcs only out of nodes in ``out_from``."""
    rows, cols, vals = [], [], []
    for u, v, e in H.edges(data=True):
        w = float(e.get("hops", 1))
        for a, b in ((u, v), (v, u)):
            if a in out_from:
                rows.append(index[a]); cols.append(index[b]); vals.append(w)
    n = len(index)
    return sparse.csr_matrix((vals, (rows, cols)), shape=(n, n))


def _chip_distances(H: nx.Graph, chip_ids: list, forwarders: set, chunk: int = 512):
    """Yield (chip row block, distances to every chip) with only ``forwarders`` passed through."""
    nodes = list(H)
    index = {n: i for i, n in enumerate(nodes)}
    M = _csr(H, index, out_from=forwarders)
    cidx = np.array([index[c] for c in chip_ids])
    for start in range(0, len(chip_ids), chunk):
        block = chip_ids[start:start + chunk]
        # a non-forwarding source still sends on its own links: start from its neighbours
        firsts = sorted({m for c in block if c not in forwarders for m in H[c] if m in forwarders}
                        | {c for c in block if c in forwarders}, key=index.get)
        fidx = np.array([index[f] for f in firsts], dtype=int)
        D = csgraph.shortest_path(M, method="D", directed=True, indices=fidx)[:, cidx]
        pos = {f: i for i, f in enumerate(firsts)}
        out = np.full((len(block), len(chip_ids)), np.inf)
        for i, c in enumerate(block):
            if c in forwarders:
                out[i] = D[pos[c]]
            else:
                for m in H[c]:
                    if m in pos:
                        np.minimum(out[i], float(H.edges[c, m].get("hops", 1)) + D[pos[m]], out=out[i])
            out[i, start + i] = 0.0
        yield start, out


def hop_stats(G: nx.Graph) -> HopStats:
    """Diameter, mean and histogram of chip-to-chip hop counts.

    Paths pass only through nodes with ``forwards=True`` (patch leaves count as the
    two links they join).  A pair with no such path but one through a relay chip
    (rail-only, PXN) counts with the relay path and in ``relay_pairs``.
    """
    H = forwarding_graph(G)
    chip_ids = chips(H)
    forwarders = {v for v, d in H.nodes(data=True) if d.get(FORWARDS)}
    hist: Counter = Counter()
    relay = unreachable = 0
    relay_rows = []
    for start, D in _chip_distances(H, chip_ids, forwarders):
        finite = np.isfinite(D)
        np.fill_diagonal(finite[:, start:start + len(D)], False)
        vals, counts = np.unique(D[finite], return_counts=True)
        hist.update({int(v): int(c) for v, c in zip(vals, counts)})
        missing = ~np.isfinite(D)
        if missing.any():
            relay_rows.append((start, missing))
    if relay_rows:
        every = set(H)  # relays: chips may forward too
        relay_D = dict(_chip_distances(H, chip_ids, every))
        for start, missing in relay_rows:
            D = relay_D[start]
            vals = D[missing]
            ok = np.isfinite(vals)
            relay += int(ok.sum())
            unreachable += int((~ok).sum())
            v, c = np.unique(vals[ok], return_counts=True)
            hist.update({int(a): int(b) for a, b in zip(v, c)})
    total = sum(hist.values())
    mean = sum(h * c for h, c in hist.items()) / total if total else 0.0
    return HopStats(max(hist) if hist else 0, float(mean), dict(sorted(hist.items())), relay, unreachable)


@dataclass(frozen=True)
class Bisection:
    """The smallest cut found between two halves of the chips."""

    GBps: float            # per direction, GB/s
    halves: str            # which halves, in words
    candidates: dict[str, float] = field(default_factory=dict)  # every split tried -> GB/s


def _split_candidates(G: nx.Graph, chip_ids: list) -> dict[str, np.ndarray]:
    """Ways to halve the chips: by rank, and by every integer tag that splits them evenly."""
    n = len(chip_ids)
    half = n // 2
    cands = {f"ranks 0-{half - 1} | {half}-{n - 1}": np.arange(n) < half}
    tags = set()
    for c in chip_ids:
        tags.update(k for k, v in G.nodes[c].items() if isinstance(v, int) and not isinstance(v, bool)
                    and k != RANK)
    for tag in sorted(tags):
        vals = np.array([G.nodes[c].get(tag, -1) for c in chip_ids])
        uniq = np.unique(vals)
        if len(uniq) < 2:
            continue
        # the lower half of the tag's values, where that holds exactly half the chips
        cut = uniq[len(uniq) // 2]
        side = vals < cut
        if side.sum() == half:
            cands[f"{tag} < {cut} | {tag} >= {cut}"] = side
    return cands


def bisection(G: nx.Graph) -> Bisection:
    """Bisection bandwidth per direction: the minimum cut between two halves of the chips.

    Notes
    -----
    The true minimum bisection is NP-hard; we take the minimum, over structured
    splits (first/second half of ranks, and each integer tag such as ``rack``, ``x``,
    ``group`` split at its middle value), of the max-flow min cut from one half to
    the other, and report which split gave it.  Capacities are per direction.
    """
    H = forwarding_graph(G)
    chip_ids = chips(H)
    if len(chip_ids) < 2:
        return Bisection(0.0, "fewer than 2 chips")
    nodes = list(H)
    index = {n: i for i, n in enumerate(nodes)}
    caps = np.array([e[CAPACITY_GBPS] for _, _, e in H.edges(data=True)])
    scale = 1 if np.allclose(caps, np.round(caps)) else 1000   # scipy's max-flow wants integers
    u = np.array([index[a] for a, _ in H.edges()])
    v = np.array([index[b] for _, b in H.edges()])
    c = np.round(caps * scale).astype(np.int64)
    N = len(nodes)
    S, T = N, N + 1
    chip_cap = np.zeros(N, dtype=np.int64)
    np.add.at(chip_cap, u, c)
    np.add.at(chip_cap, v, c)
    cidx = np.array([index[x] for x in chip_ids])
    results = {}
    for label, side in _split_candidates(H, chip_ids).items():
        a, b = cidx[side], cidx[~side]
        rows = np.concatenate([u, v, np.full(len(a), S), b])
        cols = np.concatenate([v, u, a, np.full(len(b), T)])
        data = np.concatenate([c, c, chip_cap[a], chip_cap[b]])
        if data.max() >= 2 ** 31:
            raise ValueError("capacities too large for the max-flow solver's 32-bit integers")
        M = sparse.csr_matrix((data.astype(np.int32), (rows, cols)), shape=(N + 2, N + 2))
        M.sum_duplicates()
        flow = csgraph.maximum_flow(M, S, T).flow_value
        results[label] = flow / scale / 8.0   # Gb/s -> GB/s
    best = min(results, key=results.get)   # ties go to the first split tried (rank halves)
    return Bisection(float(results[best]), best, results)


@dataclass(frozen=True)
class Audit:
    """An audit's figures.  Hop figures are ``None`` when hops were not computed
    (``hops=False``), bisection figures ``None`` when the bisection was not (``bisect=False``):
    a figure not computed is never a 0 that reads like a result."""

    fabric: str
    params: dict
    chips: int
    switches: int
    diameter_hops: int | None
    mean_hops: float | None
    hop_histogram: dict | None
    relay_pairs: int | None
    unreachable_pairs: int | None
    bisection_GBps: float | None
    bisection_halves: str | None
    totals: dict
    per_rack: dict
    findings: tuple
    inferred: str = ""       # the graph's ``inferred`` note: which figures are inferred, not published
    notes: tuple = ()        # how to read figures that are not what they seem (placeholder devices)
    # bill of materials (topo.parts): BomLine per part counted from the graph, totals over the parts
    # with a figure, and the parts without one (never counted as 0)
    bom: tuple = ()
    capex_usd: float | None = None
    power_kw: float | None = None
    unpriced: tuple = ()

    @property
    def ok(self) -> bool:
        return all(f.ok for f in self.findings)

    def summary(self) -> str:
        """One line: size, diameter, bisection, budget checks (what a notebook shows)."""
        failed = sum(1 for f in self.findings if not f.ok)
        checks = (f"{len(self.findings):,} budget checks ok" if not failed else
                  f"FAILED {failed:,} of {len(self.findings):,} budget checks")
        hops = "diameter not computed" if self.diameter_hops is None else f"diameter {self.diameter_hops} hops"
        bis = ("bisection not computed" if self.bisection_GBps is None else
               f"bisection {self.bisection_GBps:,.1f} GB/s")
        return f"{self.fabric}: {self.chips:,} chips, {self.switches:,} switches, {hops}, {bis}, {checks}"

    def to_text(self, show_all: bool = False) -> str:
        """The audit as ``fabricsim audit`` prints it: failures first, the headline, totals, the bill of
        materials, notes, every check with ``show_all``, and the verdict line last."""
        # a figure the audit skipped is None: say so, never print it as 0
        failed = [f for f in self.findings if not f.ok]
        # a failing audit leads with what failed: the headline and tables follow
        out = _audit_failures(self, failed) + [""] if failed else []
        hops = ("hop diameter, mean hops, relayed and unreachable pairs: not computed (--no-hops)"
                if self.diameter_hops is None
                else f"hop diameter {self.diameter_hops}   mean hops {self.mean_hops:.3f}")
        out += [f"{self.fabric}  " + " ".join(f"{k}={v}" for k, v in self.params.items()),
               f"chips {self.chips:,}   switch ASICs {self.switches:,}"
               + (f" ({self.totals['switch_nodes']:,} graph nodes: a grouped node stands for several)"
                  if "switch_nodes" in self.totals else "") + f"   {hops}",
               "bisection not computed (--no-bisection)" if self.bisection_GBps is None
               else f"bisection {self.bisection_GBps:,.1f} GB/s per direction  (halves: {self.bisection_halves})"]
        if self.relay_pairs:
            out.append(f"{self.relay_pairs:,} chip pairs are reachable only by relaying through a chip "
                       f"(rail-only / PXN); hop counts include the relay")
        if self.unreachable_pairs:
            out.append(f"PARTIAL: {self.unreachable_pairs:,} chip pairs have no path at all")
        if self.inferred:
            out.append(f"inferred (I, not published): {self.inferred}")
        out.extend(f"note: {n}" for n in self.notes)
        out.append("")
        per_rack = {k[:-len("_per_rack")] for k in self.totals if k.endswith("_per_rack")}
        rows = [[k, v, self.totals.get(f"{k}_per_rack", "")] for k, v in self.totals.items()
                if not k.endswith("_per_rack")]
        out.append(table(rows, ["total", "fabric", "per rack" if per_rack else ""]))
        out.append("")
        out.extend(_format_bom(self))
        notes: dict[tuple, list] = {}
        for f in self.findings:
            if f.ok and f.note:
                notes.setdefault((f.check, f.note), []).append(f.where)
        if notes:
            out.append("Notes:")
            for (check, note), where in notes.items():
                more = f" and {len(where) - 1:,} more" if len(where) > 1 else ""
                out.append(f"  {check}: {note}  ({where[0]}{more})")
        if show_all:
            out.append(table([[f.where, f.check, f.used, f.available, f.unit, "ok" if f.ok else "FAIL", f.note]
                               for f in self.findings], ["where", "check", "used", "available", "unit", "", "note"]))
        if failed:
            out.append(f"FAILED (above): {len(failed):,} of {len(self.findings):,} budget checks")
        else:
            out.append(f"OK: all {len(self.findings):,} budget checks pass ({CHECKS_COUNTED})")
        return "\n".join(out)

    def __repr__(self) -> str:
        return f"Audit({self.summary()})"

    def _repr_html_(self) -> str:
        from html import escape
        rows = "".join(f"<tr><td>{escape(str(k))}</td><td>{escape(str(v))}</td></tr>"
                       for k, v in list(self.totals.items())[:12])
        return f"<b>{escape(self.summary())}</b><table>{rows}</table>"

    def as_dict(self) -> dict[str, Any]:
        return {"fabric": self.fabric, "params": self.params, "chips": self.chips, "switches": self.switches,
                "diameter_hops": self.diameter_hops, "mean_hops": self.mean_hops,
                "hop_histogram": (None if self.hop_histogram is None
                                  else {str(k): v for k, v in self.hop_histogram.items()}),
                "relay_pairs": self.relay_pairs, "unreachable_pairs": self.unreachable_pairs,
                "bisection_GBps": self.bisection_GBps, "bisection_halves": self.bisection_halves,
                "totals": self.totals, "per_rack": self.per_rack,
                "findings": [f.as_dict() for f in self.findings], "inferred": self.inferred,
                "notes": list(self.notes), "bom": [b.as_dict() for b in self.bom], "capex_usd": self.capex_usd,
                "power_kw": self.power_kw, "unpriced": list(self.unpriced), "ok": self.ok}


def audit(G: nx.Graph, *, devices: dict[str, Device] | None = None, hops: bool = True,
          bisect: bool = True, parts=None) -> Audit:
    """Audit ``G``: budgets, totals (fabric and per rack), hop distances, bisection, bill of materials.

    The bill of materials (``bom``, ``capex_usd``, ``power_kw``, ``unpriced``) counts the graph's
    parts by the rule in :mod:`fabricsim.topo.parts`; ``parts`` overrides the part figures (a
    catalog from :func:`fabricsim.topo.parts.load_parts`, a TOML path or a mapping of that schema).

    ``hops=False`` skips the hop statistics and ``bisect=False`` the bisection; their
    figures are then ``None`` (JSON ``null``), not 0.

    Parameters
    ----------
    hops : hop distances between chips (diameter, mean); off is faster on the biggest fabrics.
    bisect : the bisection max-flow and the halves it cuts.
    parts : TOML of part prices and power overriding the built-in ones (schema: topo/parts.toml).

    Examples
    --------
    >>> from fabricsim.fabrics import build
    >>> a = audit(build("jalapeno-rack"))
    >>> a.ok, a.totals["local_switch_capacity_Tbps"], a.bisection_GBps
    (True, 614.4, 38400.0)
    """
    bad = validate(G, devices=devices)
    if bad:
        # a graph off the contract (NaN or infinite capacities, ...) has no meaningful budgets:
        # refuse it rather than report checks that pass on garbage
        more = f" (and {len(bad) - 3} more)" if len(bad) > 3 else ""
        raise BadInput(f"{G.graph.get('name', 'graph')}: {len(bad)} contract violation(s): "
                       + "; ".join(map(str, bad[:3])) + more)
    findings = tuple(budget_findings(G, devices=devices))
    bom = bill_of_materials(G, parts)
    tot = totals(G, devices=devices)
    racks = sorted({d["rack"] for _, d in G.nodes(data=True) if "rack" in d})
    per_rack = {}
    if racks:
        tot["racks"] = len(racks)
        members = defaultdict(list)
        for n, d in G.nodes(data=True):
            if "rack" in d:
                members[d["rack"]].append(n)
        per_rack = {str(r): totals(G, devices=devices, nodes=members[r]) for r in racks}
        # figures every rack shares go into the flat totals as "<name>_per_rack"
        first = per_rack[str(racks[0])]
        for k, val in first.items():
            if all(per_rack[str(r)].get(k) == val for r in racks):
                tot[f"{k}_per_rack"] = val
    tot.update(chip_bandwidth(G))
    # a figure not computed is None, never a 0 that reads like a result
    hop_figures = dict.fromkeys(("diameter_hops", "mean_hops", "hop_histogram", "relay_pairs",
                                 "unreachable_pairs"))
    if hops:
        hs = hop_stats(G)
        hop_figures.update(diameter_hops=hs.diameter_hops, mean_hops=hs.mean_hops, hop_histogram=hs.histogram,
                           relay_pairs=hs.relay_pairs, unreachable_pairs=hs.unreachable_pairs)
    bi = bisection(G) if bisect else None
    devs = DEVICES if devices is None else devices
    placeholders = sorted({d[MODEL] for _, d in G.nodes(data=True) if devs[d[MODEL]].placeholder})
    notes = ()
    if placeholders:
        notes = (f"placeholder device(s) {', '.join(placeholders)}: budget-free stand-ins, not parts; their "
                 f"lane and capacity budgets (the checks against them, switch capacities) describe nothing "
                 f"real and chip_diff_pairs counts their chips' wired lanes; pass chip_model= / "
                 f"switch_model= for a real budget",)
    return Audit(fabric=G.graph.get("name", "?"), params=params_of(G), chips=int(tot["chips"]),
                 switches=int(tot["switch_asics"]), **hop_figures,
                 bisection_GBps=None if bi is None else bi.GBps, bisection_halves=None if bi is None else bi.halves,
                 totals=tot, per_rack=per_rack,
                 findings=findings, inferred=str(G.graph.get("inferred", "")), notes=notes,
                 bom=bom.lines, capex_usd=bom.capex_usd, power_kw=bom.power_kw, unpriced=bom.unpriced)


# what "N budget checks" counts: the same N on every run and option of one fabric (budget_findings)
CHECKS_COUNTED = ("per chip and switch: lanes, ports per speed, bandwidth, lane rate; per chip: lanes per tier; "
                  "per switch with links down and up, or a local switch: down/up")


def _format_bom(a) -> list[str]:
    """The bill of materials table and its two totals; a part without a figure shows "-", never 0."""
    def fig(v, spec):
        return "-" if v is None else spec.format(v)
    rows = [[b.kind, b.part, f"{b.count:,}", fig(b.price_usd, "{:,.0f}"), fig(b.watts, "{:,.4g}"),
             fig(None if b.price_usd is None else b.count * b.price_usd, "{:,.0f}"),
             fig(None if b.watts is None else b.count * b.watts / 1000, "{:,.3f}"), b.label] for b in a.bom]
    out = ["Bill of materials (counted from the graph; figures and sources: topo/parts.toml, --parts):",
           table(rows, ["kind", "part", "count", "USD each", "W each", "USD", "kW", "label"]),
           f"capex {a.capex_usd:,.0f} USD   power {a.power_kw:,.3f} kW   (sums over the parts with a figure)"]
    if a.unpriced:
        out.append(f"unpriced (not in the totals): {'; '.join(a.unpriced)}")
    return out + [""]


# what "N budget checks" counts: the same N on every run and option of one fabric (topo.auditing.budget_findings)

def _audit_failures(a, failed) -> list[str]:
    """The FAILED line and one line per failing check (how many, one example)."""
    out = [f"FAILED: {len(failed):,} of {len(a.findings):,} budget checks ({CHECKS_COUNTED})"]
    groups: dict[str, list] = {}
    for f in failed:
        groups.setdefault(f.check, []).append(f)
    for check, fs in groups.items():
        f = fs[0]
        out.append(f"  {check}: {len(fs):,} x, e.g. {f.where}: {fmt(f.used)} of {fmt(f.available)} "
                   f"{f.unit}" + (f" ({f.note})" if f.note else ""))
    return out
