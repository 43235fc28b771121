"""Token economics per fabric (``fabricsim serve``): a roofline step model per layer and phase
(compute, memory, network through the flow solver with a named library, launch), a
concurrency sweep with mesh search, and TPOT / TTFT / tokens per kW / $ per million tokens."""
from .arch import Arch, ChipConstants, arch_of, chip_constants
from .model import (OVERLAPS, LayerTerms, StepTerms, acceptance_length, expected_distinct, kv_capacity,
                    step_terms, weights_per_chip_bytes)
from .network import LIBRARY_CHOICES, Library, NetworkPricer, library
from .disagg import DisaggTerms, Pools, kv_traffic, parse_disaggregate
from .sweep import (ClassResult, ClassRow, FailResult, ServePoint, ServeResult, candidate_meshes, plot_frontier, serve,
                    serve_failed, serve_failure_class)

__all__ = ["Arch", "ChipConstants", "arch_of", "chip_constants", "OVERLAPS", "LayerTerms", "StepTerms",
           "acceptance_length", "expected_distinct", "kv_capacity", "step_terms", "weights_per_chip_bytes",
           "LIBRARY_CHOICES", "Library", "NetworkPricer", "library", "ServePoint", "ServeResult",
           "candidate_meshes", "plot_frontier", "serve", "FailResult", "serve_failed", "DisaggTerms", "Pools",
           "kv_traffic", "parse_disaggregate", "ClassResult", "ClassRow", "serve_failure_class"]
