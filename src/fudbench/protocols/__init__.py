"""Protocols: which pixels are removed, in which order, and what is recorded.

    Protocol.run(model, x, y, attribution, imputer, ...) -> CurveResult
"""
from fudbench.protocols.topk import CurveResult, TopKCurve  # noqa: F401

# Also: fudbench.protocols.sensitivity_n.SensitivityN, fudbench.protocols.infidelity.Infidelity
