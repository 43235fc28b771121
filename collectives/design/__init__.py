"""Design search: the Pareto front of a builder's parameters (``fabricsim design``).

:mod:`.space` reads a design space (builder, values, workload, objectives, constraints),
:mod:`.search` evaluates designs cheapest-first with exact pruning, :mod:`.pareto` keeps
the non-dominated ones.
"""
from .pareto import dominates, pareto_mask
from .plot import plot_front
from .search import DesignPoint, DesignResult, design, evaluate
from .space import CONSTRAINTS, OBJECTIVES, DesignSpace, load_space, space_from_dict

__all__ = ["DesignSpace", "DesignPoint", "DesignResult", "design", "evaluate", "load_space", "space_from_dict",
           "pareto_mask", "dominates", "plot_front", "OBJECTIVES", "CONSTRAINTS"]
