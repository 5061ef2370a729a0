"""A user function that raises surfaces at the driver as the product's typed error, in both
modes and through every sink: first line = operator, call, record and the user's exception;
then the user's own frames (file, line, code) as Python prints them; Spark's failure is
``__cause__``, not the message's first lines."""

from __future__ import annotations

import pytest
from pyspark_datastream import (
    GraphBuildError,
    KeyedProcessFunction,
    OutputTypeError,
    SerializationError,
    SourceSchemaError,
    Types,
    UserFunctionError,
)

THIS = __file__


@pytest.fixture(scope="module")
def temp_root(tmp_path_factory):
    """The module's temporary folders (one-off STREAMING checkpoints), checked at its end: a
    failed job leaves nothing there, nor do the tasks Spark was still cancelling when it
    failed (they can write after the failure is raised, and their folder is removed then)."""
    root = tmp_path_factory.mktemp("temp")
    yield root
    left = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.parent != root)
    assert left == [], "the jobs' temporary folders are not gone"


@pytest.fixture(autouse=True)
def temp_folder(temp_root, request, monkeypatch):
    """Each test's jobs keep their temporary folders in one of ``temp_root``."""
    import tempfile

    folder = temp_root / request.node.name.replace("[", "_").replace("]", "")
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))


def _line(marker: str) -> int:
    with open(THIS, encoding="utf-8") as f:
        return next(i for i, text in enumerate(f, 1) if marker in text and "_line(" not in text)


def parse(record: dict) -> int:
    return int(record["amount"])  # RAISES-KEYERROR


class Ratio(KeyedProcessFunction):
    def process_element(self, value, ctx):
        yield 100 // (value - 3)  # RAISES-ZERO


def _check(error: BaseException, first: str, marker: str, code: str) -> None:
    assert isinstance(error, UserFunctionError), type(error)
    text = str(error)
    assert text.splitlines()[0] == first
    assert f'File "{THIS}", line {_line(marker)}' in text, text
    assert code in text
    assert "Traceback (most recent call last):" in text
    assert "pyspark_datastream" not in text.split("\n", 1)[1].split("(while running")[0], \
        "only the user's frames are shown"
    assert error.__cause__ is not None and not isinstance(error.__cause__, UserFunctionError)


@pytest.mark.parametrize("mode", ["BATCH", "STREAMING"])
def test_user_map_and_process_errors_show_the_users_frames(env_factory, tmp_path, mode):
    env = env_factory(mode, {"execution.checkpointing.dir": str(tmp_path / "ckpt")})
    mapped = env.from_collection([1, 2, 3]).map(
        lambda v: parse({"n": v} if v == 2 else {"amount": v}))
    with pytest.raises(UserFunctionError) as info:
        list(mapped.execute_and_collect())
    _check(info.value, "operator 'Map': map failed on 2: KeyError: 'amount'", "RAISES-KEYERROR",
           'return int(record["amount"])')
    assert "KeyError: 'amount'" in str(info.value)

    env = env_factory(mode, {"execution.checkpointing.dir": str(tmp_path / "ckpt2")})
    ratios = env.from_collection([1, 2, 3, 4]).key_by(lambda v: v % 2).process(Ratio())
    with pytest.raises(UserFunctionError) as info:
        list(ratios.execute_and_collect())
    _check(info.value, "operator 'Ratio': process_element failed on 3: ZeroDivisionError: "
           "integer division or modulo by zero", "RAISES-ZERO", "yield 100 // (value - 3)")


def test_user_error_through_a_batch_delta_sink(env_factory, tmp_path):
    env = env_factory("BATCH")
    env.from_collection([1, 2, 3, 4]).key_by(lambda v: v % 2).process(
        Ratio(), output_type=Types.LONG()).sink_to_delta(str(tmp_path / "out"))
    with pytest.raises(UserFunctionError) as info:
        env.execute("ratios")
    _check(info.value, "operator 'Ratio': process_element failed on 3: ZeroDivisionError: "
           "integer division or modulo by zero", "RAISES-ZERO", "yield 100 // (value - 3)")
    assert "BATCH job 'ratios', sink" in str(info.value)
    # as in Flink, the failed job consumed its sinks: a second execute() has none to run
    with pytest.raises(GraphBuildError, match="no sinks declared"):
        env.execute("again")


@pytest.mark.parametrize("mode", ["BATCH", "STREAMING"])
def test_a_value_that_does_not_fit_its_declared_type_is_refused_in_every_sink(
        env_factory, tmp_path, mode):
    """Was: 1.75 for Types.LONG() written as 1 by the sinks and returned as 1.75 by BATCH
    collect; now the same OutputTypeError everywhere, and the Delta table gets no version."""
    def build(env):
        return env.from_collection([1, 2, 3]).map(lambda v: v * 1.75 if v == 1 else v,
                                                  output_type=Types.LONG())

    message = (r"operator 'Map': an output record does not match the declared output_type "
               r"Types.LONG\(\): field 'value' is declared Types.LONG\(\) but holds 1.75 \(float\)")
    env = env_factory(mode, {"execution.checkpointing.dir": str(tmp_path / "ckpt")})
    with pytest.raises(OutputTypeError, match=message):
        list(build(env).execute_and_collect())
    table = tmp_path / "out"
    build(env).sink_to_delta(str(table))
    with pytest.raises(OutputTypeError, match=message):
        env.execute("typed")
    assert not (table / "_delta_log").exists() or not any((table / "_delta_log").glob("*.json"))


class LastAsText(KeyedProcessFunction):
    def open(self, runtime_context):
        from pyspark_datastream import ValueStateDescriptor

        self.last = runtime_context.get_state(ValueStateDescriptor("last", Types.LONG()))

    def process_element(self, value, ctx):
        self.last.update(str(value[1]))  # a str in a LONG state
        yield value[1]


def test_a_heap_state_value_that_cannot_be_snapshotted_names_operator_and_state(
        env_factory, tmp_path):
    """The heap backend keeps Python objects and serializes them at the end of each
    micro-batch: the failure there names the operator and the state too."""
    env = env_factory("STREAMING", {"execution.checkpointing.dir": str(tmp_path / "ckpt")})
    ds = env.from_collection([("k", 1)]).key_by(lambda r: r[0]).process(LastAsText())
    with pytest.raises(SerializationError, match=r"^operator 'LastAsText', state 'last': "
                                                 r"LongSerializer cannot serialize '1'"):
        list(ds.execute_and_collect())


@pytest.mark.parametrize("mode", ["BATCH", "STREAMING"])
def test_a_source_column_whose_type_changed_names_column_types_and_file(
        spark, env_factory, tmp_path, mode):
    import pyarrow as pa
    import pyarrow.parquet as pq

    src = tmp_path / "clicks"
    src.mkdir()
    pq.write_table(pa.table({"user": ["a", "b"], "ts": pa.array([1, 2], pa.int64())}),
                   str(src / "p1.parquet"))
    pq.write_table(pa.table({"user": ["a"], "ts": ["3"]}), str(src / "p2.parquet"))  # ts: str
    env = env_factory(mode, {"execution.checkpointing.dir": str(tmp_path / "ckpt")})
    reader = spark.read if mode == "BATCH" else spark.readStream
    clicks = env.from_dataframe(reader.schema("user string, ts long").parquet(str(src)))
    counts = clicks.key_by(lambda r: r[0]).reduce(lambda a, b: (a[0], a[1] + b[1]))
    with pytest.raises(SourceSchemaError, match=r"source column 'ts' changed type: the program "
                                                r"reads it as bigint .*p2.parquet holds BINARY"):
        list(counts.execute_and_collect())


@pytest.mark.parametrize("mode", ["BATCH", "STREAMING"])
def test_a_key_selector_returning_an_unpicklable_key_is_a_serialization_error(
        env_factory, tmp_path, mode):
    # a dict, list or set key is keyed by its contents, as in PyFlink (test_pyflink_ports.py);
    # only a key no serializer can write is refused, naming it
    import threading

    env = env_factory(mode, {"execution.checkpointing.dir": str(tmp_path / "ckpt")})
    keyed = env.from_collection([1, 2]).key_by(lambda v: (v, threading.Lock()))
    with pytest.raises(SerializationError) as info:
        list(keyed.reduce(lambda a, b: a + b).execute_and_collect())
    assert "lock" in str(info.value), str(info.value)


def test_the_delta_writer_spark_conf_is_checked_when_the_job_is_built(spark, env_factory,
                                                                      tmp_path):
    from pyspark_datastream import ConfigurationError

    before = spark.conf.get("pyspark_datastream.delta.writer", None)
    spark.conf.set("pyspark_datastream.delta.writer", "deltars")
    try:
        env = env_factory("BATCH")
        env.from_collection([1], type_info=Types.LONG()).sink_to_delta(str(tmp_path / "out"))
        with pytest.raises(ConfigurationError, match=r"pyspark_datastream.delta.writer \(Spark "
                                                     r"conf\) must be one of auto, spark, "
                                                     r"delta-rs, got 'deltars'"):
            env.execute("bad-writer")
        assert not (tmp_path / "out").exists()
    finally:  # the session's setting as it was: later tests of this process depend on it
        if before is None:
            spark.conf.unset("pyspark_datastream.delta.writer")
        else:
            spark.conf.set("pyspark_datastream.delta.writer", before)


@pytest.mark.parametrize("mode", ["BATCH", "STREAMING"])
@pytest.mark.parametrize("sink", ["delta", "print", "collect", "keyed-delta"])
def test_a_source_column_whose_type_changed_is_a_source_schema_error_in_every_sink(
        spark, env_factory, tmp_path, mode, sink):
    """The mismatch is the error's first line whatever reads the source: a Delta sink's
    writer, a print sink, a collect; with or without a keyed stage before it."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    src = tmp_path / "events"
    src.mkdir()
    pq.write_table(pa.table({"k": ["a", "b"], "v": pa.array([1, 2], pa.int64())}),
                   str(src / "p1.parquet"))
    pq.write_table(pa.table({"k": ["a"], "v": ["3"]}), str(src / "p2.parquet"))  # v: str
    env = env_factory(mode, {"execution.checkpointing.dir": str(tmp_path / "ckpt")})
    reader = spark.read if mode == "BATCH" else spark.readStream
    events = env.from_dataframe(reader.schema("k string, v long").parquet(str(src)))
    pair = Types.TUPLE([Types.STRING(), Types.LONG()])
    if sink.startswith("keyed"):
        out = events.key_by(lambda r: r[0]).map(lambda r: (r[0], r[1]), output_type=pair)
    else:
        out = events.map(lambda r: (r[0], r[1] * 2), output_type=pair)
    expected = (r"^source column 'v' changed type: the program reads it as bigint .*"
                r"p2.parquet holds BINARY")
    with pytest.raises(SourceSchemaError, match=expected):
        if sink == "collect":
            list(out.execute_and_collect())
        else:
            if sink.endswith("delta"):
                out.sink_to_delta(str(tmp_path / "out"))
            else:
                out.print()
            env.execute("schema change")


def test_to_dataframe_names_a_source_file_whose_column_type_changed_when_built(
        spark, env_factory, tmp_path):
    """The user runs a to_dataframe() query themselves, so the project cannot rewrite its
    failure: a streaming Parquet source's file that does not fit the declared schema is a
    SourceSchemaError when the DataFrame is built, naming column, both types and file."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    src = tmp_path / "events"
    src.mkdir()
    pq.write_table(pa.table({"k": ["a", "b"], "v": pa.array([1, 2], pa.int64())}),
                   str(src / "p1.parquet"))
    pair = Types.TUPLE([Types.STRING(), Types.LONG()])

    def build():
        env = env_factory("STREAMING", {"execution.checkpointing.dir": str(tmp_path / "ckpt")})
        events = env.from_dataframe(
            spark.readStream.schema("k string, v long").parquet(str(src)))
        return events.map(lambda r: (r[0], r[1] * 2), output_type=pair).to_dataframe()

    query = (build().writeStream.format("memory").queryName("schema_check_out")
             .option("checkpointLocation", str(tmp_path / "user-ckpt"))
             .trigger(availableNow=True).start())
    query.awaitTermination()
    assert sorted(tuple(r) for r in spark.table("schema_check_out").collect()) == \
        [("a", 2), ("b", 4)]
    pq.write_table(pa.table({"k": ["a"], "v": ["3"]}), str(src / "p2.parquet"))  # v: str
    with pytest.raises(SourceSchemaError, match=r"^source column 'v' changed type: the "
                                                r"program reads it as bigint .*p2.parquet "
                                                r"holds BINARY"):
        build()


@pytest.mark.parametrize("mode", ["BATCH", "STREAMING"])
def test_to_dataframe_of_either_mode_names_a_source_file_whose_column_type_changed(
        spark, env_factory, tmp_path, mode):
    """The caller runs what to_dataframe() returns, so a Parquet source file that does not
    fit the read schema is a SourceSchemaError when it is built, in BATCH as in STREAMING;
    a source whose files fit still gives its records."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    src = tmp_path / "events"
    src.mkdir()
    pq.write_table(pa.table({"k": ["a", "b"], "v": pa.array([1, 2], pa.int64())}),
                   str(src / "p1.parquet"))
    pair = Types.TUPLE([Types.STRING(), Types.LONG()])

    def build(ckpt: str):
        env = env_factory(mode, {"execution.checkpointing.dir": str(tmp_path / ckpt)})
        reader = spark.read if mode == "BATCH" else spark.readStream
        events = env.from_dataframe(reader.schema("k string, v long").parquet(str(src)))
        return events.map(lambda r: (r[0], r[1] * 2), output_type=pair).to_dataframe()

    good = build("ckpt1")
    if mode == "BATCH":
        assert sorted(tuple(r) for r in good.collect()) == [("a", 2), ("b", 4)]
    pq.write_table(pa.table({"k": ["a"], "v": ["3"]}), str(src / "p2.parquet"))  # v: str
    with pytest.raises(SourceSchemaError) as info:
        build("ckpt2")
    first = str(info.value).splitlines()[0]
    assert first.startswith("source column 'v' changed type: the program reads it as bigint "
                            "(the source's schema), but "), first
    assert "p2.parquet holds BINARY (a string or bytes)" in first, first
    assert f"the to_dataframe() of {mode} job" in first, first
