"""The runtime mode: the one type a job's mode has from the user's setting to the executors.

``RuntimeExecutionMode`` is ``execution.runtime-mode`` as set (PyFlink's enum, AUTOMATIC
included); :class:`RuntimeMode` is the mode a job runs in once AUTOMATIC is decided. Plans,
translators, ``OperatorConfig`` and savepoint metadata carry :class:`RuntimeMode`; its string
value appears only where the configuration is read and where JSON or a result row is written.
The processing-time options' per-mode defaults (FLIP-134) live here and nowhere else.
"""

from __future__ import annotations

import enum
from typing import Any, Mapping

from ..state_store.exceptions import ConfigurationError

__all__ = [
    "RuntimeExecutionMode",
    "RuntimeMode",
    "MODE_KEY",
    "PROCESSING_TIME_ALLOW_VALUES",
    "PROCESSING_TIME_END_OF_INPUT_VALUES",
]

#: the configuration key of the mode
MODE_KEY = "execution.runtime-mode"
#: ``pipeline.processing-time.allow``'s values
PROCESSING_TIME_ALLOW_VALUES = ("ALLOW", "IGNORE", "FAIL")
#: ``pipeline.processing-time.end-of-input``'s values
PROCESSING_TIME_END_OF_INPUT_VALUES = ("FIRE_AND_QUIESCE", "IGNORE")


class RuntimeMode(enum.Enum):
    """The runtime mode one job runs in: ``execution.runtime-mode`` with AUTOMATIC decided."""

    BATCH = "BATCH"
    STREAMING = "STREAMING"

    @classmethod
    def parse(cls, value: Any, key: str = MODE_KEY) -> RuntimeMode:
        """The mode ``value`` names (a :class:`RuntimeMode`, or its name in any case).

        Args:
            value: the mode, or its name as configuration or a caller gives it.
            key: the setting or argument named in the error.

        Returns:
            The mode.

        Raises:
            ConfigurationError: ``value`` names no runtime mode (AUTOMATIC included: it is
                decided before a job's mode is).
        """
        if isinstance(value, cls):
            return value
        if isinstance(value, str):
            try:
                return cls(value.strip().upper())
            except ValueError:
                pass
        raise ConfigurationError(
            f"{key} must be one of {', '.join(m.value for m in cls)}; got {value!r}")

    @property
    def is_batch(self) -> bool:
        """True for BATCH."""
        return self is RuntimeMode.BATCH

    @property
    def processing_time_defaults(self) -> Mapping[str, str]:
        """FLIP-134's defaults of the processing-time options in this mode, by
        ``OperatorConfig`` field (BATCH: FAIL / IGNORE; STREAMING: ALLOW /
        FIRE_AND_QUIESCE)."""
        return _PROCESSING_TIME_DEFAULTS[self]


_PROCESSING_TIME_DEFAULTS: dict[RuntimeMode, Mapping[str, str]] = {
    RuntimeMode.BATCH: {"processing_time_allow": "FAIL", "processing_time_end_of_input": "IGNORE"},
    RuntimeMode.STREAMING: {"processing_time_allow": "ALLOW",
                            "processing_time_end_of_input": "FIRE_AND_QUIESCE"},
}


class RuntimeExecutionMode(enum.Enum):
    """``execution.runtime-mode``: BATCH, STREAMING (default, as in Flink) or AUTOMATIC."""

    STREAMING = RuntimeMode.STREAMING.value
    BATCH = RuntimeMode.BATCH.value
    AUTOMATIC = "AUTOMATIC"

    def decided(self) -> RuntimeMode | None:
        """The runtime mode this setting names; None for AUTOMATIC (the sources decide)."""
        return None if self is RuntimeExecutionMode.AUTOMATIC else RuntimeMode(self.value)
