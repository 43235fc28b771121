"""Jobs: collectives priced together.

Public names: ``Job``, ``JobResult``, ``MixResult``, ``mix`` (concurrent jobs sharing
the links in one max-min solve), ``load_jobs``, ``jobs_from_dict``, ``JOB_KEYS``
(``[[job]]`` TOML spec files), all in :mod:`.mix`.
"""
from .mix import JOB_KEYS, Job, JobResult, MixResult, jobs_from_dict, load_jobs, mix

__all__ = ["Job", "JobResult", "MixResult", "mix", "load_jobs", "jobs_from_dict", "JOB_KEYS"]
