"""Step cost model inputs: nccl-tests logs (``NcclPoint``, ``NcclRun``, ``parse_log``, ``parse_text``)."""
from .nccl_tests import NcclPoint, NcclRun, parse_log, parse_text
