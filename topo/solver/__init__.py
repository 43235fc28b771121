"""Flow-level solver: weighted max-min fair rates and event-driven completion times.

Flows ``f = 0..F-1`` move bytes over directed links ``l = 0..L-1`` of capacity
``capacity_Bps[l]`` (bytes/s).  Routes are *fixed splits* (ECMP hashing): flow
``f`` puts the share ``A[f, l]`` of its rate on link ``l``.  ``A`` is never formed;
it is given factored as ``A = flow_piece @ piece_link``, where a *piece* is a
shared route segment (a chip's fan-out to its switches, a rack's spread over the
spines, a torus ring arc).  The 2,048-chip all-to-all has 4.19 M flows of about
four pieces each; its explicit ``A`` would hold ~570 M non-zeros.

Public functions
----------------
maxmin_rates
    Weighted max-min fair rates by progressive filling.
simulate
    Completion times: solve rates, retire the earliest finishers, re-solve.
link_load_bound
    Busiest link's bytes / capacity: a lower bound on the completion time.
check_maxmin
    The capacity and max-min certificate invariants, as readable findings.
estimate_memory_bytes, guard_memory
    Refuse problems that would not fit in memory (:class:`TooLarge`).

Modules
-------
results
    The frozen results :class:`Rates`, :class:`FlowResult`, :class:`Bound`.
inputs
    Checking and canonicalising the inputs (private).
segments
    Index arithmetic on CSR/CSC runs (private).
groups
    Parallel links solved as one constraint (private).
compiled
    When and how the compiled filling (``topo/_solver_kernels.py``) is used (private).
fill
    The progressive filling :class:`_Fill` and :func:`maxmin_rates`.
retire
    Rows retiring from a filling: the event loop's state, mixed into :class:`_Fill`.
events
    :func:`simulate`: the event loop and its quiet-event shortcuts.
bound, check, memory
    :func:`link_load_bound`, :func:`check_maxmin`, :func:`estimate_memory_bytes` and
    :func:`guard_memory`.

Names are imported from this package (``fabricsim.topo.solver``), not from its
modules.  Its private names (``_Fill``, ``_group_links``, the tunables such as
``_USE_KERNEL``) resolve to the module that holds them, and setting one on the
package sets it there, so tests and benchmarks tune the solver as before.

Notes
-----
Per-flow ``weights`` (default 1) scale a flow's share: at fill level ``t`` every
unfrozen flow runs at ``weights[f] * t``.  ``multiplicity[f]`` (default 1) makes
one row stand for that many identical flows: its load counts ``m`` times, its
rate is per single flow.

Progressive filling keeps, per link, the *active weight*
``aw[l] = sum over unfrozen f of m[f] w[f] A[f, l]`` (computed factored) and the
load ``used[l]`` of the frozen flows, so a link saturates at level
``(capacity - used) / aw``; these levels are cached.  When links saturate, every
flow of a piece touching one of them crosses it (all entries are nonnegative),
so the solver freezes whole pieces, each exactly once, and subtracts the frozen
flows' weight from ``aw`` through their rows of ``flow_piece`` and the pieces'
rows of ``piece_link``.

Many-level problems (heterogeneous capacities: thousands of distinct levels)
are filled in *passes*, not one round at a time: freezing only raises the
levels of the links it touches, so the lowest-level links, taken in order, are
the next rounds up to the first one whose links an earlier round's flows touch
(a link they empty instead is skipped).  Those rounds are the ones the
one-at-a-time filling takes, and are frozen in one set of vector operations.
The lowest-level links come from a window kept between passes (one O(L)
partition per window, not per round).  In :func:`simulate`, an event that
reopens no flow (its flows froze last) is retired without a rollback, and runs
of such events are taken together.

With numba installed (the optional extra ``fast``), a filling of many rows, or
one that has run many rounds, goes through a compiled loop
(``topo/_solver_kernels.py``) that takes the same rounds one at a time at a cost
of the entries they freeze plus a small window of the lowest levels; without
numba the numpy passes do it all.  Such a filling of many rows gets them grouped
by the piece likely to freeze them (:func:`_row_order`), so a round finds its rows
nearly in sequence; results are mapped back to the caller's rows.

Two exact reductions run first.  Links whose columns of ``piece_link`` are
proportional carry loads in that proportion, so they are one constraint of
capacity ``min cap / share`` (:func:`_group_links`; per-link results are mapped
back).  In :func:`simulate`, when every event left after a filling reopens no
flow (equal sizes and weights: the fastest flows froze last), they are formed
from one sort and the phase ends (:func:`_quiet_tail`), as the loop would.
"""
from __future__ import annotations

import sys
import types

from . import bound, check, compiled, events, fill, groups, inputs, memory, results, retire, segments
from .bound import link_load_bound
from .check import check_maxmin
from .events import simulate
from .fill import maxmin_rates
from .memory import estimate_memory_bytes, guard_memory
from .results import Bound, FlowResult, Rates

__all__ = [
    "Rates",
    "FlowResult",
    "Bound",
    "maxmin_rates",
    "simulate",
    "link_load_bound",
    "check_maxmin",
    "estimate_memory_bytes",
    "guard_memory",
]

# the modules, in dependency order: a private name resolves to the first that defines it
_MODULES = (results, inputs, segments, groups, compiled, retire, fill, bound, events, check, memory)


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _defines(mod: types.ModuleType, name: str) -> bool:
    """Whether ``mod`` defines ``name`` (a function or class it imported is defined elsewhere)."""
    obj = vars(mod)[name]
    return not isinstance(obj, (types.FunctionType, type)) or obj.__module__ == mod.__name__


def _forward(name: str, home: types.ModuleType) -> property:
    """``name`` of module ``home`` as a property of the package: set, it is set in every
    module that binds the same object (``home`` and those that imported it)."""
    def get(_pkg):
        return vars(home)[name]

    def put(_pkg, value):
        old = vars(home)[name]
        for mod in _MODULES:
            if name in vars(mod) and vars(mod)[name] is old:
                setattr(mod, name, value)

    return property(get, put, doc=f"``{home.__name__}.{name}``")


class _Package(types.ModuleType):
    """``fabricsim.topo.solver`` as one namespace over its modules, private names included.

    Each private name a module defines (``_Fill``, ``_group_links``, the tunables such
    as ``_USE_KERNEL``) is a property of the package: reading it gives the defining
    module's current value, and setting it (as tests do, with ``monkeypatch``) sets it
    wherever the solver reads it, as when the solver was one module.
    """

    def __dir__(self):
        return sorted(set(super().__dir__()) | {n for n, v in vars(_Package).items()
                                                if isinstance(v, property)})


for _mod in _MODULES:
    for _name in list(vars(_mod)):
        if _is_private(_name) and _defines(_mod, _name) and not hasattr(_Package, _name):
            setattr(_Package, _name, _forward(_name, _mod))
del _mod, _name

sys.modules[__name__].__class__ = _Package
