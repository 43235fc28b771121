"""What if: the price of a collective before and after failures, one scenario or a sweep of them.

The pipeline
------------
1. One scenario (:mod:`.scenario`): ``whatif`` prices the collective on the intact
   fabric and on the fabric with the failures applied, side by side (``WhatIf``:
   the slowdown, the chips and groups affected, the new bottlenecks).
2. A sweep of scenarios (:mod:`.sweeps`): ``sweep`` enumerates every failure of a
   class (N-1), every pair (N-2) or seeded samples, prices each as a small picklable
   task and ranks them worst first with the distribution of slowdowns (``Sweep``).
3. Orbits folding (:mod:`.orbits`): the sweep folds its scenarios into orbits under
   the fabric's verified symmetries and solves one representative per orbit (and
   ``whatif --explain`` names the symmetries one scenario keeps).
4. An atlas (:mod:`.atlas`): every failure class of a fabric swept N-1 for one workload,
   one row per class (blast radius, slowdowns, worst scenario), and the year's expected
   degradation from cited failure rates (``failure_rates.toml``), analytic or Monte Carlo.
5. Runners: the sweep's tasks run on a ``Runner``; ``LocalRunner`` (:mod:`.sweeps`)
   in-process or in a process pool, ``DaskRunner`` / ``ResumableRunner`` /
   ``sweep_runner`` (:mod:`.dask_runner`, imported on its own so Dask stays optional)
   on a Dask cluster and resuming from a results file.

Public names
------------
WhatIf, whatif
    One scenario: baseline and degraded cost reports side by side, the slowdown,
    the chips and groups affected and by how much, the new bottlenecks.
Sweep, sweep
    Every failure of a class (N-1), every pair (N-2), or K seeded random samples,
    priced independently and ranked worst first, with the distribution of slowdowns.
Runner, LocalRunner
    How a sweep's scenarios are run: ``runner.map(fn, tasks)`` yields ``fn(task)``
    for every task, in any order, as each completes.  ``LocalRunner(workers=N)``
    runs them in-process (N = 1) or in a process pool.
Atlas, AtlasClass, atlas, Rates, load_rates, Availability, availability, plot_atlas
    Every failure class of a fabric N-1 for one workload, and its availability over a year.
PRICE_OPTIONS
    The :func:`~fabricsim.collectives.price` options a whatif or a sweep passes through.
(Pictures of a sweep: :func:`fabricsim.collectives.plots.plot_sweep`.)
"""
from __future__ import annotations

from .atlas import Atlas, AtlasClass, Availability, Rates, atlas, availability, load_rates, plot_atlas
from .scenario import PRICE_OPTIONS, WhatIf, whatif
# _fabric, _groups, _scenarios: private helpers the tests import from here, as from the flat module
from .sweeps import LocalRunner, Runner, Sweep, _fabric, _groups, _scenarios, sweep

__all__ = ["WhatIf", "whatif", "Sweep", "sweep", "Runner", "LocalRunner", "PRICE_OPTIONS", "Atlas", "AtlasClass",
           "atlas", "Rates", "load_rates", "Availability", "availability", "plot_atlas"]
