"""Jobs: collectives priced together.

Public names: ``Job``, ``JobResult``, ``MixResult``, ``mix`` (concurrent jobs sharing
the links in one max-min solve, :mod:`.mix`).
"""
from .mix import Job, JobResult, MixResult, mix

__all__ = ["Job", "JobResult", "MixResult", "mix"]
