"""Step cost model inputs.

* nccl-tests logs: ``NcclPoint``, ``NcclRun``, ``parse_log``, ``parse_text``.
* Calibration files: ``Calibration``, ``PARAMS``, ``PROTOCOLS``, ``load_calibration``,
  ``calibration_from_dict``, ``dumps_calibration``.
"""
from .calibration import (PARAMS, PROTOCOLS, Calibration, calibration_from_dict, dumps_calibration,
                          load_calibration)
from .nccl_tests import NcclPoint, NcclRun, parse_log, parse_text
