"""RuntimeContext.get_task_name_with_subtasks in Flink's format, ``name (i/n)#attempt``
with ``i`` counted from 1 (Flink's TaskInfo), read from a keyed operator's open(); the
runtime context is PyFlink's KeyedStateStore."""

from __future__ import annotations

from pyspark_datastream import KeyedStateStore, Types, ValueStateDescriptor
from pyspark_datastream.operators.functions import KeyedProcessFunction
from pyspark_datastream.operators.keyed_process import KeyedProcessOperator


def test_task_name_with_subtasks_is_flinks_format(drive) -> None:
    class Names(KeyedProcessFunction):
        def open(self, rc):
            self.names = (rc.get_task_name(), rc.get_task_name_with_subtasks())

        def process_element(self, value, ctx):
            yield value

    fn = Names()
    drive(KeyedProcessOperator(fn), operator_name="Sessions", subtask_index=2, parallelism=4)
    assert fn.names == ("Sessions", "Sessions (3/4)#0")


def test_the_runtime_context_is_a_keyed_state_store(drive) -> None:
    class Count(KeyedProcessFunction):
        def open(self, rc):
            store: KeyedStateStore = rc
            self.is_store = isinstance(rc, KeyedStateStore)
            self.count = store.get_state(ValueStateDescriptor("n", Types.LONG()))

        def process_element(self, value, ctx):
            self.count.update((self.count.value() or 0) + 1)
            yield (value, self.count.value())

    fn = Count()
    d = drive(KeyedProcessOperator(fn))
    assert fn.is_store
    out = [o.value for k in ("a", "b", "a") for o in d.push(k, k, 1) if o.tag is None]
    assert out == [("a", 1), ("b", 1), ("a", 2)]
