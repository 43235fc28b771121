"""The network: graph contract, devices, builders, routing, solver, failures, audits, drawing.

Public names
------------
contract : ``validate``, ``Violation``, ``forwarding_graph``, ``add_bundle``, ``chips``, ``switches``
devices : ``Device``, ``DEVICES``, ``register_device``, ``device``
builders : ``switched_domain``, ``leaf_spine``, ``torus``, ``dragonfly``, ``full_mesh``, ``boardfly``, ``BUILDERS``
routing : ``link_table``, ``LinkTable``, ``route``, ``Routes``
solver : ``maxmin_rates``, ``simulate``, ``link_load_bound``, ``check_maxmin``, ``estimate_memory_bytes``,
    ``guard_memory``, ``Rates``, ``FlowResult``, ``Bound``
failures : ``domains``, ``domain_classes``, ``Domain``, ``parse_spec``, ``apply_failures``, ``chip_tier_bandwidth``
auditing : ``audit``, ``Audit``, ``Finding``, ``budget_findings``, ``hop_stats``, ``bisection``, ``totals``
draw (imported on first use; loads matplotlib) : ``draw_fabric``, ``draw_utilization``
errors : ``FabricError``, ``BadInput``, ``TooLarge``
export : ``astra_network``, ``write_astra``, ``AstraNetwork``, ``Dimension`` (ASTRA-sim analytical network.yml)
"""
# Names resolve on first use, so importing the catalog (which needs only the contract
# and devices) does not pay for scipy's sparse graph and linear-algebra imports.
_HOME = {
    "auditing": ("Audit", "Finding", "audit", "bisection", "budget_findings", "hop_stats", "totals"),
    "builders": ("BUILDERS", "boardfly", "dragonfly", "full_mesh", "leaf_spine", "switched_domain", "torus"),
    "contract": ("Violation", "add_bundle", "chips", "forwarding_graph", "switches", "validate"),
    "devices": ("DEVICES", "Device", "device", "register_device"),
    "errors": ("BadInput", "FabricError", "TooLarge"),
    "failures": ("Domain", "apply_failures", "chip_tier_bandwidth", "domain_classes", "domains", "parse_spec"),
    "routing": ("LinkTable", "Routes", "link_table", "route"),
    "solver": ("Bound", "FlowResult", "Rates", "check_maxmin", "estimate_memory_bytes", "guard_memory",
               "link_load_bound", "maxmin_rates", "simulate"),
    "draw": ("draw_fabric", "draw_utilization"),
    "export": ("AstraNetwork", "Dimension", "astra_network", "write_astra"),
}
_WHERE = {name: mod for mod, names in _HOME.items() for name in names}


def __getattr__(name):
    if name in _WHERE:
        import importlib
        return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    raise AttributeError(f"module 'fabricsim.topo' has no attribute {name!r}")


__all__ = ["Audit", "Finding", "audit", "bisection", "budget_findings", "hop_stats", "totals", "BUILDERS",
           "boardfly", "dragonfly", "full_mesh", "leaf_spine", "switched_domain", "torus", "Violation", "add_bundle",
           "chips", "forwarding_graph", "switches", "validate", "DEVICES", "Device", "device", "register_device",
           "BadInput", "FabricError", "TooLarge", "Domain", "apply_failures",
           "chip_tier_bandwidth", "domain_classes", "domains", "parse_spec", "LinkTable", "Routes", "link_table",
           "route", "Bound", "FlowResult", "Rates", "check_maxmin", "estimate_memory_bytes", "guard_memory",
           "link_load_bound", "maxmin_rates", "simulate", "draw_fabric", "draw_utilization",
           "AstraNetwork", "Dimension", "astra_network", "write_astra"]
