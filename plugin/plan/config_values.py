"""The values of configuration options: parsing them (durations, triggers, booleans) and the
checks the option table (``config.OPTIONS``) runs on each value set or configured."""

from __future__ import annotations

import re
from typing import Any, Optional

from ..state_store.backends import get_backend, registered_backends
from ..state_store.exceptions import ConfigurationError

__all__ = [
    "check_boolean",
    "check_checkpoint_interval",
    "check_integer",
    "check_path",
    "check_retention",
    "check_state_backend",
    "check_trigger",
    "parse_boolean",
    "parse_duration_ms",
    "parse_trigger",
]

#: units of a Spark interval (``processing-time=<interval>``), singular or plural
_INTERVAL_UNITS = ("microsecond", "millisecond", "second", "minute", "hour", "day", "week")
_UNIT = "|".join(_INTERVAL_UNITS)
_INTERVAL = re.compile(rf"^(?:interval\s+)?(?:\d+(?:\.\d+)?\s*(?:{_UNIT})s?\s*)+$", re.IGNORECASE)


def parse_trigger(value: Any) -> tuple[str, Optional[str]]:
    """``execution.streaming.trigger`` -> (kind, interval): available-now | once |
    processing-time=<interval> (a Spark interval such as ``2 seconds`` or ``1 minute 30
    seconds``)."""
    text = str(value or "available-now").strip()
    low = text.lower()
    if low in ("available-now", "availablenow"):
        return "available-now", None
    if low == "once":
        return "once", None
    if low.startswith("processing-time="):
        interval = text.split("=", 1)[1].strip()
        if _INTERVAL.match(interval):
            return "processing-time", interval
    raise ConfigurationError(
        f"execution.streaming.trigger must be available-now, once or processing-time=<interval> "
        f"with an interval of <number> <unit> ({', '.join(_INTERVAL_UNITS)}, e.g. "
        f"processing-time=10 seconds); got {value!r}"
    )


_DURATION = re.compile(r"^\s*(\d+)\s*([a-z]*)\s*$", re.IGNORECASE)
_DURATION_MS = {"": 1, "ms": 1, "milli": 1, "millis": 1, "millisecond": 1, "milliseconds": 1,
                "s": 1000, "sec": 1000, "secs": 1000, "second": 1000, "seconds": 1000,
                "m": 60_000, "min": 60_000, "mins": 60_000, "minute": 60_000,
                "minutes": 60_000, "h": 3_600_000, "hour": 3_600_000, "hours": 3_600_000,
                "d": 86_400_000, "day": 86_400_000, "days": 86_400_000}


def parse_duration_ms(key: str, raw: Any) -> int:
    """A Flink duration (``5000``, ``500 ms``, ``10 s``, ``1 min``, ``2 h``) in milliseconds.

    Args:
        key: the option or argument the value is for (named in the error).
        raw: an int of milliseconds or a Flink duration string.

    Returns:
        The duration in milliseconds.

    Raises:
        ConfigurationError: ``raw`` is no duration, or is negative.
    """
    if isinstance(raw, int) and not isinstance(raw, bool):
        if raw < 0:
            raise ConfigurationError(f"{key} must be a duration >= 0, got {raw!r}")
        return raw
    match = _DURATION.match(str(raw)) if isinstance(raw, str) else None
    unit = match.group(2).lower() if match else None
    if match is None or unit not in _DURATION_MS:
        raise ConfigurationError(
            f"{key} must be a duration such as 5000, 500 ms, 10 s, 1 min or 2 h, got {raw!r}")
    return int(match.group(1)) * _DURATION_MS[unit]


def check_checkpoint_interval(key: str, raw: str) -> str:
    """The interval kept as ``<n> ms``; Flink's minimum is 10 ms."""
    value = parse_duration_ms(key, raw)
    if value < 10:
        raise ConfigurationError(f"{key} must be at least 10 ms (as in Flink), got {raw!r}")
    return f"{value} ms"


def check_retention(key: str, raw: str) -> str:
    value = str(raw).strip().upper()
    if value != "RETAIN_ON_CANCELLATION":
        raise ConfigurationError(
            f"{key} {raw!r} is not supported: a STREAMING job's checkpoint always stays under "
            f"<execution.checkpointing.dir>/<job name> when the job stops or is cancelled (the "
            f"next run of the job resumes from it); RETAIN_ON_CANCELLATION is what runs. Delete "
            f"that folder to start over")
    return value


def check_integer(key: str, raw: str, low: int, high: Optional[int] = None) -> None:
    try:
        value = int(raw.strip())
    except ValueError:
        value = None
    if value is None or value < low or (high is not None and value > high):
        bounds = f"{low}..{high}" if high is not None else f">= {low}"
        raise ConfigurationError(f"{key} must be an integer {bounds}, got {raw!r}")


_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}


def parse_boolean(key: str, value: Any) -> bool:
    """A boolean option's value: ``true``/``1``/``yes``/``on`` or ``false``/``0``/``no``/
    ``off`` (any case, a bool as itself).

    Args:
        key: the option, named in the error.
        value: its value.

    Returns:
        The bool.

    Raises:
        ConfigurationError: the value is neither.
    """
    low = str(value).strip().lower()
    if low in _TRUE:
        return True
    if low in _FALSE:
        return False
    raise ConfigurationError(f"{key} must be true or false, got {value!r}")


def check_boolean(key: str, raw: str) -> None:
    parse_boolean(key, raw)


def check_path(key: str, raw: str) -> None:
    if not raw.strip():
        raise ConfigurationError(f"{key} must be a path, got {raw!r}")


def check_trigger(key: str, raw: str) -> None:
    parse_trigger(raw)


def check_state_backend(key: str, raw: str) -> str:
    """``raw`` as a registered backend users may choose (a name, any case, or a
    ``"module:attr"`` path, see ``state_store/backends/registry.py``), normalised."""
    value = str(raw).strip()
    try:
        backend_type = get_backend(value)
    except ConfigurationError as exc:
        backend_type, reason = None, f" ({exc})" if ":" in value else ""
    if backend_type is None or not backend_type.configurable:
        names = [n for b in registered_backends() if b.configurable for n in (b.name, *b.aliases)]
        raise ConfigurationError(
            f"{key} must be one of {', '.join(names)} or the 'module:attr' path of a state "
            f"backend registration, got {raw!r}" + (reason if backend_type is None else ""))
    return value if ":" in value else value.lower()
