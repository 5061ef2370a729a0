"""PyFlink's smaller API items (no Spark): Instant, RowKind, project's typing, per-operator
hints, descriptor names, JobStatus, JobExecutionResult and CloseableIterator, exports.

Expected values are PyFlink's documented ones (``RowKind`` short strings ``+I -U +U -D``,
Flink's globally terminal job states FAILED/CANCELED/FINISHED, ...)."""

from __future__ import annotations

import pickle

import pyspark_datastream as pds
import pytest
from pyspark_datastream import (
    CloseableIterator,
    GraphBuildError,
    Instant,
    JobExecutionResult,
    JobStatus,
    KeyGroupError,
    ListStateDescriptor,
    MapStateDescriptor,
    Row,
    RowKind,
    StreamExecutionEnvironment,
    Types,
    ValueStateDescriptor,
)


def test_instant_is_pyflinks_and_round_trips_its_serializers():
    i = Instant.of_epoch_milli(1_500)
    assert (i.seconds, i.nanos, i.to_epoch_milli()) == (1, 500_000_000, 1_500)
    before = Instant.of_epoch_milli(-1)
    assert (before.seconds, before.nanos) == (-1, 999_000_000)
    t = Types.INSTANT()
    for value in (i, before, Instant(0, 0), Instant(2**40, 7)):
        assert t.create_serializer().deserialize(t.create_serializer().serialize(value)) == value
    lex = t.lexicographic_serializer()
    ordered = [Instant(-5, 3), Instant(-1, 0), Instant(0, 0), Instant(0, 1), Instant(9, 0)]
    assert sorted(ordered, key=lex.serialize) == ordered
    assert pickle.loads(pickle.dumps(i)) == i
    with pytest.raises(ValueError, match="nanos"):
        Instant(0, 10**9)
    with pytest.raises(pds.SerializationError):
        t.create_serializer().serialize(1500)


def test_row_kind_is_kept_set_and_pickled():
    row = Row(name="a", n=1)
    assert row.get_row_kind() is RowKind.INSERT
    row.set_row_kind(RowKind.UPDATE_BEFORE)
    assert row.get_row_kind() is RowKind.UPDATE_BEFORE
    assert row == ("a", 1) and row.name == "a" and row.as_dict() == {"name": "a", "n": 1}
    copy = pickle.loads(pickle.dumps(row))
    assert copy.get_row_kind() is RowKind.UPDATE_BEFORE and copy.as_dict() == row.as_dict()
    copy.set_field_names(["x", "y"])
    assert copy.get_row_kind() is RowKind.UPDATE_BEFORE and copy.x == "a"
    plain = Row(1, 2)
    plain.set_row_kind(RowKind.DELETE)
    assert pickle.loads(pickle.dumps(plain)).get_row_kind() is RowKind.DELETE
    plain.set_row_kind(RowKind.INSERT)
    assert type(plain) is Row
    assert [k.short_string() for k in RowKind] == ["+I", "-U", "+U", "-D"]
    with pytest.raises(TypeError, match="RowKind"):
        plain.set_row_kind("+I")  # type: ignore[arg-type]


def test_a_row_key_hashes_the_same_whatever_its_kind():
    from pyspark_datastream.state_store.serializers import GenericKeySerializer

    ser = GenericKeySerializer()
    kinded = Row(k="a")
    kinded.set_row_kind(RowKind.DELETE)
    assert ser.serialize(kinded) == ser.serialize(Row(k="a"))


def _tuples(env: StreamExecutionEnvironment) -> pds.DataStream:
    return env.from_collection([(1, "a", 2.5)],
                               Types.TUPLE([Types.INT(), Types.STRING(), Types.DOUBLE()]))


def test_project_types_and_checks():
    env = StreamExecutionEnvironment.get_execution_environment()
    projected = _tuples(env).project(2, 0, 2)
    assert projected.get_type() == Types.TUPLE([Types.DOUBLE(), Types.INT(), Types.DOUBLE()])
    with pytest.raises(GraphBuildError, match=r"field indexes in 0..2, got \(3,\)"):
        _tuples(env).project(3)
    with pytest.raises(GraphBuildError, match="field indexes"):
        _tuples(env).project()
    with pytest.raises(GraphBuildError, match="Types.TUPLE records"):
        env.from_collection([1]).project(0)


def test_operator_hints_are_checked():
    env = StreamExecutionEnvironment.get_execution_environment()
    ds = _tuples(env)
    assert ds.set_buffer_timeout(-1) is ds and ds.set_max_parallelism(128) is ds
    assert ds.force_non_parallel() is ds
    with pytest.raises(GraphBuildError, match=r"set_buffer_timeout needs an int >= -1"):
        ds.set_buffer_timeout(-2)
    with pytest.raises(GraphBuildError, match=r"differs from the job's 128"):
        ds.set_max_parallelism(64)
    with pytest.raises(KeyGroupError):
        ds.set_max_parallelism(0)
    sink = ds.print()
    assert sink.set_parallelism(1) is sink
    with pytest.raises(GraphBuildError, match="positive int"):
        sink.set_parallelism(0)


def test_cache_is_refused_outside_batch():
    env = StreamExecutionEnvironment.get_execution_environment()
    with pytest.raises(GraphBuildError, match="cache\\(\\) is only supported in BATCH mode"):
        _tuples(env).cache()


def test_state_descriptors_have_get_name():
    assert ValueStateDescriptor("v", Types.LONG()).get_name() == "v"
    assert ListStateDescriptor("l", Types.LONG()).get_name() == "l"
    assert MapStateDescriptor("m", Types.STRING(), Types.LONG()).get_name() == "m"


def test_job_status_terminal_states_are_flinks():
    assert {s.name for s in JobStatus} == {
        "INITIALIZING", "CREATED", "RUNNING", "FAILING", "FAILED", "CANCELLING", "CANCELED",
        "FINISHED", "RESTARTING", "SUSPENDED", "RECONCILING"}
    assert {s for s in JobStatus if s.is_globally_terminal_state()} == {
        JobStatus.FAILED, JobStatus.CANCELED, JobStatus.FINISHED}
    assert {s for s in JobStatus if s.is_terminal_state()} == {
        JobStatus.FAILED, JobStatus.CANCELED, JobStatus.FINISHED, JobStatus.SUSPENDED}


def test_job_execution_result_has_a_job_id():
    a = JobExecutionResult("j", "BATCH", 1)
    b = JobExecutionResult("j", "BATCH", 1)
    assert len(a.get_job_id()) == 32 and int(a.get_job_id(), 16) >= 0
    assert a.get_job_id() != b.get_job_id()
    assert pds.JobClient.finished(a).get_job_id() == a.get_job_id()


def test_closeable_iterator_next():
    it = CloseableIterator(iter([1, 2]))
    assert (it.next(), it.next()) == (1, 2)
    with pytest.raises(StopIteration):
        it.next()


def test_names_exported_where_pyflink_exports_them():
    for name in ("TimerService", "Window", "NeverTrigger", "CheckpointConfig",
                 "CheckpointingMode", "ExternalizedCheckpointRetention", "ExecutionConfig",
                 "RowKind", "Instant", "CachedDataStream"):
        assert name in pds.__all__ and hasattr(pds, name)
    assert isinstance(pds.TimeWindow(0, 10), pds.Window)
    assert isinstance(pds.GlobalWindow.get(), pds.Window)
    assert pds.TimeWindow(0, 10).max_timestamp() == 9
