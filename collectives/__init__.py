"""The traffic: placements, collective algorithms, pricing.

Public names: ``price`` and ``CostReport`` (pricing), ``by_size``, ``by_mesh``,
``from_file``, ``parse_mesh``, ``PLACEMENTS`` (placements), ``ALGORITHMS``,
``COLLECTIVES``, ``phases``, ``algorithms_for`` (algorithms), ``busbw_factor``.
"""
from .algorithms import ALGORITHMS, COLLECTIVES, Phase, algorithms_for, phases, view_of
from .placement import PLACEMENTS, by_mesh, by_size, from_file, parse_mesh, parse_placement
from .engine import PriceOptions
from .price import CostReport, PhaseReport, busbw_factor, price

__all__ = ["ALGORITHMS", "COLLECTIVES", "Phase", "algorithms_for", "phases", "view_of", "PLACEMENTS",
           "by_mesh", "by_size", "from_file", "parse_mesh", "parse_placement", "CostReport", "PhaseReport",
           "busbw_factor", "price", "PriceOptions"]
