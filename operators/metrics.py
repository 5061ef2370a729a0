"""User metrics with PyFlink's API: ``runtime_context.get_metrics_group()``.

A ``MetricGroup`` registers counters, gauges, meters and distributions under a scope
(``add_group``). One registry per operator instance (operator name and subtask) lives in the
process that runs it; :func:`report` logs an instance's current values as one line, the way
Flink's SLF4J reporter does: at the end of a BATCH task, and in STREAMING at most every
:data:`REPORT_INTERVAL_S` seconds per instance (values cumulative over the run). The line goes
to the logger ``pyspark_datastream.metrics``; when nothing configured logging in the worker,
to its stderr, which Spark keeps in the executor's log.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from typing import Any, Optional
from urllib.parse import quote

from ..state_store.exceptions import GraphBuildError

__all__ = ["MetricGroup", "Counter", "Meter", "Distribution", "new_group", "mark", "report",
           "report_since", "report_due", "snapshot", "kinds", "merge", "read_published",
           "REPORT_INTERVAL_S", "INTERVAL_ENV", "to_worker_stderr"]

log = logging.getLogger("pyspark_datastream.metrics")


def to_worker_stderr(logger: logging.Logger) -> None:
    """In a bare Python worker (no logging configured), send ``logger``'s INFO lines to the
    worker's stderr, the executor's log; nothing where logging is configured.

    Args:
        logger: the library logger about to log.
    """
    if not logger.handlers and not logging.getLogger().handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)

#: STREAMING: the least time between two reports of one instance, in seconds (Flink's
#: reporters default to 10 s too); the workers' environment variable
#: ``PYSPARK_DATASTREAM_METRICS_INTERVAL_S`` overrides it (``spark.executorEnv.*`` on a cluster)
REPORT_INTERVAL_S = 10.0
INTERVAL_ENV = "PYSPARK_DATASTREAM_METRICS_INTERVAL_S"


def _interval() -> float:
    value = os.environ.get(INTERVAL_ENV)
    try:
        return REPORT_INTERVAL_S if value is None else float(value)
    except ValueError:
        log.warning("%s=%r is not a number of seconds; reporting every %s s", INTERVAL_ENV,
                    value, REPORT_INTERVAL_S)
        return REPORT_INTERVAL_S


class Counter:
    """A count that goes up and down (PyFlink's ``Counter``)."""

    def __init__(self) -> None:
        self._count = 0

    def inc(self, n: int = 1) -> None:
        """Args:
            n: How much to add."""
        self._count += n

    def dec(self, n: int = 1) -> None:
        """Args:
            n: How much to subtract."""
        self._count -= n

    def get_count(self) -> int:
        """Returns:
        The current count."""
        return self._count


class Meter:
    """Events and their rate per second over the last ``time_span_in_seconds`` (PyFlink's
    ``Meter``).

    Args:
        time_span_in_seconds: The window of the rate.
    """

    def __init__(self, time_span_in_seconds: int = 60) -> None:
        self._span = time_span_in_seconds
        self._count = 0
        self._events: list[tuple[float, int]] = []  # (monotonic second, events in it)

    def mark_event(self, value: int = 1) -> None:
        """Args:
            value: How many events happened."""
        self._count += value
        now = float(int(time.monotonic()))
        if self._events and self._events[-1][0] == now:
            self._events[-1] = (now, self._events[-1][1] + value)
        else:
            self._events.append((now, value))
            cutoff = now - self._span
            while self._events and self._events[0][0] <= cutoff:
                self._events.pop(0)

    def get_count(self) -> int:
        """Returns:
        Every event marked so far."""
        return self._count

    def get_rate(self) -> float:
        """Returns:
        Events per second over the last ``time_span_in_seconds``."""
        cutoff = time.monotonic() - self._span
        return sum(n for t, n in self._events if t > cutoff) / self._span


class Distribution:
    """Statistics of the values it is updated with (PyFlink's ``Distribution``): count, sum,
    min, max and mean."""

    def __init__(self) -> None:
        self.count = 0
        self.sum: float = 0
        self.min: Optional[float] = None
        self.max: Optional[float] = None

    def update(self, value: float) -> None:
        """Args:
            value: One observed value."""
        self.count += 1
        self.sum += value
        self.min = value if self.min is None else min(self.min, value)
        self.max = value if self.max is None else max(self.max, value)

    @property
    def mean(self) -> Optional[float]:
        """The mean of the values (None before the first)."""
        return self.sum / self.count if self.count else None


class MetricGroup:
    """Named metrics of one operator instance, in nested scopes (PyFlink's ``MetricGroup``).

    Args:
        scope: The group's scope components (empty: the operator's own group).
        registry: The instance's metrics by full name (shared by its subgroups).
    """

    def __init__(self, scope: tuple[str, ...] = (),
                 registry: Optional[dict[str, Any]] = None) -> None:
        self._scope = scope
        self._registry: dict[str, Any] = {} if registry is None else registry

    def add_group(self, name: str, extra: Optional[str] = None) -> MetricGroup:
        """A subgroup: ``add_group("db")``, or the key-value group ``add_group("shard", "3")``.

        Args:
            name: The subgroup's name (the key of a key-value group).
            extra: The value of a key-value group.

        Returns:
            The subgroup.
        """
        _check_name(name, "add_group")
        scope = self._scope + (name,) if extra is None else self._scope + (name, str(extra))
        return MetricGroup(scope, self._registry)

    def _register(self, name: str, metric: Any) -> Any:
        _check_name(name, type(metric).__name__.lower())
        full = ".".join(self._scope + (name,))
        existing = self._registry.get(full)
        if existing is not None:  # as in Flink: the first registration under a name is kept
            return existing
        self._registry[full] = metric
        return metric

    def counter(self, name: str) -> Counter:
        """Args:
            name: The counter's name in this group.

        Returns:
            The counter (the same one for the same name).
        """
        return self._register(name, Counter())

    def gauge(self, name: str, obj: Callable[[], Any]) -> None:
        """Register a gauge: ``obj()`` is read each time the metrics are reported.

        Args:
            name: The gauge's name in this group.
            obj: A function of no arguments giving the current value.

        Raises:
            GraphBuildError: ``obj`` is not callable.
        """
        if not callable(obj):
            raise GraphBuildError(f"MetricGroup.gauge({name!r}): obj must be a function of no "
                                  f"arguments, got {obj!r:.60}")
        self._register(name, _Gauge(obj))

    def meter(self, name: str, time_span_in_seconds: int = 60) -> Meter:
        """Args:
            name: The meter's name in this group.
            time_span_in_seconds: The window of its rate.

        Returns:
            The meter.
        """
        if isinstance(time_span_in_seconds, bool) or not isinstance(time_span_in_seconds, int) \
                or time_span_in_seconds <= 0:
            raise GraphBuildError(f"MetricGroup.meter({name!r}): time_span_in_seconds must be "
                                  f"a positive int, got {time_span_in_seconds!r}")
        return self._register(name, Meter(time_span_in_seconds))

    def distribution(self, name: str) -> Distribution:
        """Args:
            name: The distribution's name in this group.

        Returns:
            The distribution.
        """
        return self._register(name, Distribution())


class _Gauge:
    def __init__(self, obj: Callable[[], Any]) -> None:
        self.obj = obj


def _check_name(name: Any, what: str) -> None:
    if not isinstance(name, str) or not name or "." in name:
        raise GraphBuildError(f"MetricGroup.{what}: a name must be a non-empty str without "
                              f"'.', got {name!r}")


# -- the operator instances' registries in this process ------------------------------------
class _Registry:
    """One operator instance's metrics by full name, when it was made (``seq``), and where
    its reports are published (``publish``: storage layer and folder, or None)."""

    def __init__(self, seq: int, publish: Optional[tuple[Any, str]] = None) -> None:
        self.metrics: dict[str, Any] = {}
        self.seq = seq
        self.publish = publish
        self.publish_failed = False


_REGISTRIES: dict[tuple[str, int], _Registry] = {}
_LAST_REPORT: dict[tuple[str, int], float] = {}
_LOCK = threading.Lock()
_SEQ = [0]


def new_group(operator_name: str, subtask: int,
              publish: Optional[tuple[Any, str]] = None) -> MetricGroup:
    """A new operator instance's metric group; it replaces the registry of an earlier
    instance of the same operator and subtask in this process (an earlier task or run).

    Args:
        operator_name: The operator's name.
        subtask: Its subtask index.
        publish: STREAMING: (storage layer, folder) where each report is also written as
            one JSON file per instance (:func:`read_published`); None: only logged.

    Returns:
        The group.
    """
    with _LOCK:
        _SEQ[0] += 1
        registry = _Registry(_SEQ[0], publish)
        _REGISTRIES[(operator_name, subtask)] = registry
        _LAST_REPORT.pop((operator_name, subtask), None)
    return MetricGroup((), registry.metrics)


def mark() -> int:
    """Returns:
    A mark: :func:`report_since` reports the instances made after it."""
    return _SEQ[0]


def report_since(since: int, subtask: Optional[int] = None,
                 forget: bool = True) -> list[dict[str, Any]]:
    """Report, then forget, every instance made after :func:`mark` gave ``since`` (the end
    of a BATCH task: its instances' whole run).

    Args:
        since: The mark.
        subtask: Only the instances of this subtask index (None: all).
        forget: Forget the reported instances (False: they stay registered).

    Returns:
        One record per reported instance that has metrics: ``{"operator", "subtask",
        "metrics"}`` (:func:`snapshot`) and ``"kinds"`` (:func:`kinds`), for :func:`merge`.
    """
    records = []
    for instance, registry in list(_REGISTRIES.items()):
        if registry.seq > since and (subtask is None or instance[1] == subtask):
            values = report(*instance)
            if values:
                records.append({"operator": instance[0], "subtask": instance[1],
                                "metrics": values, "kinds": kinds(*instance)})
            if not forget:
                continue
            with _LOCK:
                if _REGISTRIES.get(instance) is registry:
                    del _REGISTRIES[instance]
    return records


def snapshot(operator_name: str, subtask: int) -> dict[str, Any]:
    """The current values of an instance's metrics by full name: an int for a counter,
    ``{"count", "rate"}`` for a meter, ``{"count", "sum", "min", "max", "mean"}`` for a
    distribution, a gauge's value (or the error it raised, as a str).

    Args:
        operator_name: The operator's name.
        subtask: Its subtask index.

    Returns:
        The values (empty when it registered none).
    """
    out: dict[str, Any] = {}
    registry = _REGISTRIES.get((operator_name, subtask))
    for name, metric in sorted(registry.metrics.items() if registry is not None else ()):
        if isinstance(metric, Counter):
            out[name] = metric.get_count()
        elif isinstance(metric, Meter):
            out[name] = {"count": metric.get_count(), "rate": round(metric.get_rate(), 3)}
        elif isinstance(metric, Distribution):
            out[name] = {"count": metric.count, "sum": metric.sum, "min": metric.min,
                         "max": metric.max, "mean": metric.mean}
        else:
            try:
                out[name] = metric.obj()
            except Exception as exc:  # noqa: BLE001 - a failing gauge is reported, not fatal
                out[name] = f"<gauge failed: {type(exc).__name__}: {exc}>"
    return out


def kinds(operator_name: str, subtask: int) -> dict[str, str]:
    """The kind of each of an instance's metrics by full name.

    Args:
        operator_name: The operator's name.
        subtask: Its subtask index.

    Returns:
        ``"counter"``, ``"meter"``, ``"distribution"`` or ``"gauge"`` by name.
    """
    registry = _REGISTRIES.get((operator_name, subtask))
    out = {}
    for name, metric in sorted(registry.metrics.items() if registry is not None else ()):
        out[name] = ("counter" if isinstance(metric, Counter) else
                     "meter" if isinstance(metric, Meter) else
                     "distribution" if isinstance(metric, Distribution) else "gauge")
    return out


def merge(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The metrics of an operator's parallel instances, combined per operator as Flink's
    web UI sums a vertex's subtasks: counters summed; meters' counts and rates summed;
    distributions merged (count, sum, min, max, mean of all values); a gauge's values by
    subtask index (a gauge has no sum; of a subtask's instances in several processes, the
    last one's).

    Args:
        records: What :func:`report_since` or :func:`read_published` returned, from any
            number of tasks (an instance reported twice counts once: its last record).

    Returns:
        ``{operator: {metric: value}}``, operators and metrics sorted by name.
    """
    latest: dict[tuple[str, int, str], dict[str, Any]] = {}
    for record in records:
        latest[(record["operator"], int(record["subtask"]), record.get("process", ""))] = record
    out: dict[str, dict[str, Any]] = {}
    for (operator, subtask, _), record in sorted(latest.items()):
        merged = out.setdefault(operator, {})
        for name, value in record["metrics"].items():
            kind = record["kinds"].get(name, "gauge")
            have = merged.get(name)
            if kind == "counter":
                merged[name] = (have or 0) + value
            elif kind == "meter":
                have = have or {"count": 0, "rate": 0.0}
                merged[name] = {"count": have["count"] + value["count"],
                                "rate": round(have["rate"] + value["rate"], 3)}
            elif kind == "distribution":
                merged[name] = _merge_distribution(have, value)
            else:
                merged.setdefault(name, {})[subtask] = value
    return {op: dict(sorted(values.items())) for op, values in sorted(out.items())}


def _merge_distribution(have: Optional[dict[str, Any]], value: dict[str, Any]) -> dict[str, Any]:
    if have is None or not have["count"]:
        return dict(value)
    if not value["count"]:
        return have
    count, total = have["count"] + value["count"], have["sum"] + value["sum"]
    return {"count": count, "sum": total, "min": min(have["min"], value["min"]),
            "max": max(have["max"], value["max"]), "mean": total / count}


def report(operator_name: str, subtask: int, force: bool = True) -> Optional[dict[str, Any]]:
    """Log an instance's metrics at INFO, one line (nothing when it has none).

    Args:
        operator_name: The operator's name.
        subtask: Its subtask index.
        force: Report now; False: only when :data:`REPORT_INTERVAL_S` passed since the
            instance's last report.

    Returns:
        What was logged, or None.
    """
    instance = (operator_name, subtask)
    if instance not in _REGISTRIES:
        return None
    now = time.monotonic()
    if not force and instance in _LAST_REPORT and now - _LAST_REPORT[instance] < _interval():
        return None
    _LAST_REPORT[instance] = now
    values = snapshot(operator_name, subtask)
    if not values:
        return None
    to_worker_stderr(log)
    log.info("metrics of operator %r subtask %d: %s", operator_name, subtask, values)
    registry = _REGISTRIES.get(instance)
    if registry is not None and registry.publish is not None:
        _publish(registry, registry.publish, operator_name, subtask, values)
    return values


def _publish(registry: _Registry, publish: tuple[Any, str], operator_name: str, subtask: int,
             values: dict[str, Any]) -> None:
    """Write an instance's report where the driver reads it; a failure is logged once per
    instance and never fails the job (metrics are not results)."""
    storage, folder = publish
    # STREAMING keeps an instance per subtask in each Python worker process that runs it
    # (operators/instances.py): each process's instance counts its own records
    process = f"{socket.gethostname()}-{os.getpid()}"
    record = {"operator": operator_name, "subtask": subtask, "process": process,
              "metrics": values, "kinds": kinds(operator_name, subtask)}
    uri = storage.join(folder, f"{quote(operator_name, safe='')}-{subtask}-{process}.json")
    try:
        storage.write_bytes(uri, json.dumps(record, default=str).encode("utf-8"))
    except Exception as exc:  # noqa: BLE001 - any storage error: the log line still has them
        if not registry.publish_failed:
            registry.publish_failed = True
            log.warning("metrics of operator %r subtask %d cannot be published to %s: %s",
                        operator_name, subtask, uri, exc)


def read_published(storage: Any, folder: str) -> list[dict[str, Any]]:
    """The reports the instances published into ``folder`` (see :func:`new_group`), for
    :func:`merge`; files that cannot be read or parsed are skipped (one may be mid-write).

    Args:
        storage: The storage layer (``state_store.storage.Storage``).
        folder: The folder given to the instances.

    Returns:
        One record per instance, as :func:`report_since` returns them.
    """
    try:
        names = storage.list_names(folder)
    except (OSError, FileNotFoundError):
        return []
    records = []
    for name in sorted(n for n in names if n.endswith(".json")):
        try:
            records.append(json.loads(storage.read_bytes(storage.join(folder, name))))
        except (OSError, ValueError):
            continue
    return records


def report_due() -> None:
    """Report every instance in this process whose last report is
    :data:`REPORT_INTERVAL_S` old (STREAMING, after each task's work)."""
    for operator_name, subtask in list(_REGISTRIES):
        report(operator_name, subtask, force=False)
