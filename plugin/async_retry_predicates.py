"""PyFlink's ``pyflink.datastream.async_retry_predicates``: ready-made retry predicates
(defined in ``operators/async_functions.py``)."""

from __future__ import annotations

from .operators.async_functions import (
    empty_result_predicate,
    exception_type_predicate,
    has_exception_predicate,
)

__all__ = ["empty_result_predicate", "has_exception_predicate", "exception_type_predicate"]
