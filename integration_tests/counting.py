"""Keyed stage functions that several one-query tests chain: a running count per key and
a stage pairing each count with the one it saw before."""

from __future__ import annotations

from pyspark_datastream import KeyedProcessFunction, OutputTag, Types, ValueStateDescriptor

__all__ = ["THIRDS", "CountPerKey", "SeenBefore"]

#: every third count of a :class:`CountPerKey` built with ``thirds``
THIRDS = OutputTag("thirds", Types.TUPLE([Types.LONG(), Types.LONG()]))


class CountPerKey(KeyedProcessFunction):
    """A running count per key; with ``thirds``, every third count to that side output too."""

    def __init__(self, thirds: bool = False):
        self.thirds = thirds

    def open(self, ctx):
        self.count = ctx.get_state(ValueStateDescriptor("count", Types.LONG()))

    def process_element(self, value, ctx):
        self.count.update((self.count.value() or 0) + 1)
        yield ctx.get_current_key(), self.count.value()
        if self.thirds and self.count.value() % 3 == 0:
            yield THIRDS, (ctx.get_current_key(), self.count.value())


class SeenBefore(KeyedProcessFunction):
    """Each (user, count) with the count this stage saw last for that user (0: none)."""

    def open(self, ctx):
        self.last = ctx.get_state(ValueStateDescriptor("last", Types.LONG()))

    def process_element(self, value, ctx):
        yield value[0], value[1], self.last.value() or 0
        self.last.update(value[1])
