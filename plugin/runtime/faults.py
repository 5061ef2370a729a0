"""Named crash points for fault-injection tests (inert unless an environment variable arms one).

``PYSPARK_DATASTREAM_KILL_AT=<point>:<n>`` makes the process that reaches ``<point>`` for
the ``n``-th time (1-based) die there with SIGKILL: a real kill, no ``finally`` block, no
cleanup, no flush. A process that leads its own process group (a driver started in a new
session, as the tests do) kills the whole group, so its JVM and Python workers die with it
the way they would when the machine fails; any other process kills only itself. The
variable is read once, at the first :func:`kill_point` call of the process.

Points (each named where it is reached): ``delta.before-write``, ``delta.after-write``,
``delta.after-commit`` (plugin/delta_sink.py).
"""

from __future__ import annotations

import os
import signal
from typing import Optional

__all__ = ["KILL_AT_ENV", "kill_point"]

KILL_AT_ENV = "PYSPARK_DATASTREAM_KILL_AT"

#: (point, n), read from the environment at the first call; ("", 0) when unarmed
_armed: Optional[tuple[str, int]] = None
_arrivals = 0


def _arm() -> tuple[str, int]:
    point, _, count = os.environ.get(KILL_AT_ENV, "").rpartition(":")
    if not point or not count.isdigit() or int(count) < 1:
        return ("", 0)
    return (point, int(count))


def kill_point(name: str) -> None:
    """Die here (SIGKILL) when the armed point is ``name`` and this is its n-th arrival."""
    global _armed, _arrivals
    if _armed is None:
        _armed = _arm()
    if _armed[0] != name:
        return
    _arrivals += 1
    if _arrivals < _armed[1]:
        return
    if os.getpgrp() == os.getpid():  # a session leader: its JVM and workers die with it
        os.killpg(os.getpid(), signal.SIGKILL)
    os.kill(os.getpid(), signal.SIGKILL)
