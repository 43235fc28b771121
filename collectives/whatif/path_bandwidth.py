"""Per-chip tier bandwidth counted along the chip's paths, not only on its own links.

:func:`fabricsim.topo.failures.chip_tier_bandwidth` sums a chip's own links per tier, so a
failure one hop further (a rail switch, a leaf's uplinks) leaves every chip's figure
unchanged while the collective slows: the what-if summary said "tier bandwidth changed 0
... global GB/s per chip: before 200 after 200" beside a slowdown (issue 24).  Here each
of the chip's links to a forwarding switch counts at most the chip's share of what that
switch can pass on: the switch's links of the same tier to other switches (its uplinks),
shared among the chips linked to it in proportion to their link capacity.  With every
chip sending at once (an all-to-all, the what-if's usual load) a chip cannot get more
through that switch.  A switch with no such uplinks (a single switched tier: a rack's
local switches, NVLink trays) passes everything on; torus and mesh links count whole.

Exact for two-level trees (a chip, its leaves, their spines: the Jalapeño pod, rail
clusters); losses deeper than the chip's first switch's uplinks are not counted (I).
"""
from __future__ import annotations

import networkx as nx

from ...topo.contract import CHIP, FORWARDS, KIND, SWITCH, TIER, bundle_gbps
from ...topo.failures import chip_tier_bandwidth

__all__ = ["path_tier_bandwidth"]


def path_tier_bandwidth(G: nx.Graph) -> dict[int, dict[str, float]]:
    """Each chip's bandwidth per tier along its paths, GB/s per direction (see the module notes).

    Returns
    -------
    dict
        Chip rank -> {tier: GB/s}; a chip with no links left maps to ``{}``.

    Examples
    --------
    >>> from fabricsim.fabrics import build
    >>> from fabricsim.topo.failures import apply_failures
    >>> G = build("jalapeno-pod", racks=2)
    >>> path_tier_bandwidth(G)[0]
    {'local': 600.0, 'global': 200.0}
    >>> path_tier_bandwidth(apply_failures(G, ["rail:3"])[0])[0]   # leaf 1 lost half its uplinks
    {'local': 600.0, 'global': 175.0}
    """
    return chip_tier_bandwidth(G, share_of=_uplink_shares)


def _uplink_shares(H: nx.Graph) -> dict[tuple, float]:
    """(switch, tier) -> the switch's uplink Gb/s over its chip-link Gb/s in that tier, capped at 1."""
    chip = {n: d.get(KIND) == CHIP for n, d in H.nodes(data=True)}
    share: dict[tuple, float] = {}
    for s, d in H.nodes(data=True):
        if d.get(KIND) != SWITCH or not d.get(FORWARDS, True):
            continue
        up: dict[str, float] = {}
        down: dict[str, float] = {}
        for v, e in H[s].items():
            t = str(e.get(TIER))
            side = down if chip[v] else up
            side[t] = side.get(t, 0.0) + bundle_gbps(e)
        for t, dn in down.items():
            if t in up and dn > 0:
                share[(s, t)] = min(1.0, up[t] / dn)
    return share
