"""RuntimeContext.get_task_name_with_subtasks in Flink's format, ``name (i/n)#attempt``
with ``i`` counted from 1 (Flink's TaskInfo), read from a keyed operator's open()."""

from __future__ import annotations

from pyspark_datastream.operators.functions import KeyedProcessFunction
from pyspark_datastream.operators.keyed import KeyedProcessOperator


def test_task_name_with_subtasks_is_flinks_format(drive) -> None:
    class Names(KeyedProcessFunction):
        def open(self, rc):
            self.names = (rc.get_task_name(), rc.get_task_name_with_subtasks())

        def process_element(self, value, ctx):
            yield value

    fn = Names()
    drive(KeyedProcessOperator(fn), operator_name="Sessions", subtask_index=2, parallelism=4)
    assert fn.names == ("Sessions", "Sessions (3/4)#0")
