"""fabricsim: AI-accelerator fabrics as graphs, collectives priced on them with a flow-level solver.

Subpackages (attributes of the package: ``fabricsim.topo`` and ``fabricsim.collectives`` load on first use):
``topo`` (graph contract, builders, routing, solver, audits),
``fabrics`` (the catalog), ``collectives`` (placements, algorithms, pricing).
"""
__version__ = "0.1.0"

from . import fabrics  # noqa: E402,F401  (registers the device and fabric catalogs)

_SUBPACKAGES = ("topo", "collectives", "fabrics")


def __getattr__(name):
    """``fabricsim.topo`` / ``.collectives`` on first use, so ``import fabricsim`` stays cheap for the CLI."""
    if name in _SUBPACKAGES:
        import importlib
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'fabricsim' has no attribute {name!r}")


__all__ = ["__version__", *_SUBPACKAGES]
