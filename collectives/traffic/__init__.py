"""All-to-all-v traffic: byte matrices from files and from a MoE router model.

Public names: ``load_matrix``, ``check_matrix``, ``summarize``, ``distinct_flow_sizes``
(matrix files and totals), ``MoESpec``,
``MoETraffic``, ``moe_traffic``, ``DTYPE_BYTES`` (MoE dispatch/combine).
A matrix feeds ``price(G, "all-to-all", groups=..., traffic=M)``.
"""
from .matrix import check_matrix, distinct_flow_sizes, load_matrix, summarize
from .moe import DEDUPS, DTYPE_BYTES, MoESpec, MoETraffic, expert_weights, moe_traffic, rank_reach_probability

__all__ = ["load_matrix", "check_matrix", "summarize", "distinct_flow_sizes", "MoESpec", "MoETraffic", "moe_traffic", "DTYPE_BYTES", "DEDUPS", "expert_weights", "rank_reach_probability"]
