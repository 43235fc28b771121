"""The roofline catalog, as the fabric builders name it: see :mod:`fabricsim.topo.accelerators`.

The catalog lives in ``topo/`` (beside the parts catalog) so the serving model in
``collectives/`` reads it without loading fabrics; this module keeps the old import path.
"""
from ..topo.accelerators import PRECISIONS, Accelerator, accelerator, accelerator_names, accelerator_of

__all__ = ["Accelerator", "PRECISIONS", "accelerator", "accelerator_names", "accelerator_of"]
