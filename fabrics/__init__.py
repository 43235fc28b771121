"""The catalog: real fabrics built with the builders in :mod:`fabricsim.topo`.

Public names: ``FABRICS`` (name -> Fabric), ``build(name, **params)``,
``parse_params``, ``param_specs``, the device catalog in ``devices``.
"""
from . import devices  # noqa: F401  (registers the device catalog)
from . import jalapeno  # noqa: F401
from . import nvl72, torus, boardfly, helios  # noqa: F401
from . import maia, groq, tpu8t, instinct  # noqa: F401
from . import hgx, cluster  # noqa: F401  (8-GPU nodes with NICs, rail-optimized clusters)
from .registry import FABRICS, Fabric, build, close_matches, param_specs, parse_params, register

__all__ = ["FABRICS", "Fabric", "build", "close_matches", "param_specs", "parse_params", "register", "devices"]
