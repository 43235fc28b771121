"""The network: graph contract, devices, builders, routing, solver, failures, audits.

(Public names are re-exported here as modules land.)
"""
