"""routing.torus.fold_stabilizer follows the generators (one image per flow and generator), not every
element of the stabilizer: a 64-element stabilizer over many groups folds within a work bound that
enumerating its elements would pass, and the price equals per-flow."""
import numpy as np
import pytest

from fabricsim.collectives import price
from fabricsim.fabrics import build
from fabricsim.topo.failures import apply_failures
from fabricsim.topo.routing import torus


def test_many_groups_fold_by_generators_exactly(monkeypatch):
    H = apply_failures(build("ironwood", dims=(8, 8, 8)), ["ocs:5"])[0]
    groups = np.arange(512).reshape(8, 64).tolist()            # 8 slabs of 64
    n_flows = 8 * 64 * 63
    # the stabilizer of an OCS (cube translations and reflections) has 64 elements but 6 generators:
    # a bound of 6 images per flow holds where 64 per flow would not
    monkeypatch.setattr(torus, "_STABILIZER_WORK", 6 * n_flows)
    a = price(H, "all-to-all", groups=groups, size_bytes=2**20, algorithm="direct")
    assert a.method["path"] == "stabilizer", a.method
    b = price(H, "all-to-all", groups=groups, size_bytes=2**20, algorithm="direct", symmetry=False)
    assert a.time_s == pytest.approx(b.time_s, rel=1e-9)
    assert a.group_time_s == pytest.approx(b.group_time_s, rel=1e-9)
    assert np.allclose(a.link_bytes, b.link_bytes, rtol=1e-9, atol=1e-9 * float(np.max(b.link_bytes)))
    assert a.method["quotient_size"] < n_flows
