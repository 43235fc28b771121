"""fabricsim: AI-accelerator fabrics as graphs, collectives priced on them with a flow-level solver.

Subpackages: ``topo`` (graph contract, builders, routing, solver, audits),
``fabrics`` (the catalog), ``collectives`` (placements, algorithms, pricing).
"""
__version__ = "0.1.0"

from . import fabrics  # noqa: E402,F401  (registers the device and fabric catalogs)
