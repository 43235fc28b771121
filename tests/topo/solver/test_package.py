"""The solver package (topo/solver/) keeps the namespace of the module it replaced (issue 26 item 4)."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from fabricsim.topo import solver
from fabricsim.topo.solver import compiled, events, fill, groups, retire, segments

# every name of the single-module solver that a module, test or benchmark of the repository used
USED = ["Rates", "FlowResult", "Bound", "maxmin_rates", "simulate", "link_load_bound", "check_maxmin",
        "estimate_memory_bytes", "guard_memory", "_Fill", "_Cols", "_columns", "_group_links",
        "_kernel_module", "_quiet_tail", "_row_order", "_warm_up", "_MATVEC_SHARE", "_RESYNC_SHARE",
        "_USE_KERNEL", "_KERNEL_ROUNDS_ANY", "_KERNEL_ROWS", "_kernels", "_TAIL_MIN_ROWS",
        "_GROUP_LINKS", "_MIN_RUN"]


def test_every_used_name_is_on_the_package():
    missing = [n for n in USED if not hasattr(solver, n)]
    assert not missing
    assert set(solver.__all__) <= set(dir(solver))
    assert all(n in dir(solver) for n in USED)


def test_a_tunable_set_on_the_package_is_read_where_the_solver_reads_it(monkeypatch):
    monkeypatch.setattr(solver, "_KERNEL_ROWS", 0)
    assert compiled._KERNEL_ROWS == 0 and solver._KERNEL_ROWS == 0
    monkeypatch.setattr(solver, "_RESYNC_SHARE", np.inf)
    assert retire._RESYNC_SHARE == np.inf
    monkeypatch.undo()
    assert compiled._KERNEL_ROWS == 65_536 and retire._RESYNC_SHARE == 1.0


def test_a_function_set_on_the_package_replaces_every_copy(monkeypatch):
    # _row_positions is defined in segments and imported by the modules that gather rows
    calls = []
    real = segments._row_positions
    monkeypatch.setattr(solver, "_row_positions", lambda *a: calls.append(1) or real(*a))
    for mod in (segments, groups, fill, retire, events):
        assert mod._row_positions is not real
    one = sp.csr_array(np.ones((2, 1)))
    solver.maxmin_rates(one, sp.csr_array(np.ones((1, 2))), [1.0, 4.0])
    assert calls
    monkeypatch.undo()
    assert all(mod._row_positions is real for mod in (segments, groups, fill, retire, events))


def test_the_package_state_a_module_changes_is_read_back(monkeypatch):
    # _kernels is set by compiled._kernel_module itself: the package reads the current value
    monkeypatch.setattr(solver, "_kernels", False)
    assert solver._kernel_module() is None and compiled._kernels is False


def test_a_public_name_set_on_the_package_stays_there(monkeypatch):
    monkeypatch.setattr(solver, "simulate", None)
    assert events.simulate is not None
