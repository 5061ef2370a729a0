"""PyFlink's ``pyflink.metrics``: the metric types ``runtime_context.get_metrics_group()``
hands out (defined in ``operators/metrics.py``)."""

from __future__ import annotations

from .operators.metrics import Counter, Distribution, Meter, MetricGroup

__all__ = ["MetricGroup", "Counter", "Meter", "Distribution"]
