"""The chunked per-flow passes of the routers give the same routes whatever the chunk size."""
from __future__ import annotations

import numpy as np
import pytest

from fabricsim.fabrics import build
from fabricsim.topo import routing as R
from fabricsim.topo.failures import apply_failures


def _all_pairs(n):
    s, d = np.nonzero(~np.eye(n, dtype=bool))
    return s, d


def _same(a: R.Routes, b: R.Routes):
    for m, n in ((a.flow_piece, b.flow_piece), (a.piece_link, b.piece_link)):
        assert m.shape == n.shape
        for x, y in ((m.data, n.data), (m.indices, n.indices), (m.indptr, n.indptr)):
            assert x.dtype == y.dtype and np.array_equal(x, y)
    for name in ("reachable", "relayed", "relay_rank", "hops", "latency_ns"):
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and np.array_equal(x, y), name


def _pod2_degraded():
    G = build("jalapeno-pod", racks=2)
    H, _ = apply_failures(G, [f"link:r00/xpu000--r00/gsw{k}" for k in range(4)] + ["node:r01/gsw1"])
    return H


@pytest.mark.parametrize("make, kw", [
    (lambda: build("jalapeno-pod", racks=2), {}),
    (lambda: build("jalapeno-pod", racks=2), {"split": "capacity"}),
    (lambda: build("jalapeno-pod", racks=2), {"tiers": "any"}),
    (lambda: build("jalapeno-pod", racks=2, leaf="static"), {}),
    (_pod2_degraded, {}),
])
def test_chunk_size_does_not_change_routes(monkeypatch, make, kw):
    G = make()
    s, d = _all_pairs(256)
    ref = R.route(G, s, d, **kw)
    monkeypatch.setattr(R.core, "_CHUNK_FLOWS", 1000)         # many chunks, ragged last one
    _same(R.route(G, s, d, **kw), ref)
