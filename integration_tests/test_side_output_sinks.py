"""A sink, a collect or a DataFrame attached to a process function's main output gets the main
output only: the records the function sent to ``ctx.output(tag, ...)`` go to
``get_side_output(tag)`` and nowhere else (Flink's side-output semantics; the pattern of
Flink's own side-output test, where ``print()`` reads the main output directly).

Expected values are computed here from the input, independently of the job.
"""

from __future__ import annotations

import pytest
from deltalake import DeltaTable
from pyspark_datastream import (
    CoMapFunction,
    CoProcessFunction,
    KeyedCoProcessFunction,
    KeyedProcessFunction,
    OutputTag,
    ProcessFunction,
    Types,
)

ODD = OutputTag("odd", Types.LONG())
DATA = list(range(1, 41))
OTHER = list(range(100, 111))


class Split(ProcessFunction):
    def process_element(self, value, ctx):
        if value % 2:
            ctx.output(ODD, value)
        else:
            yield f"even {value}"


class KeyedSplit(KeyedProcessFunction):
    def process_element(self, value, ctx):
        if value % 2:
            ctx.output(ODD, value)
        else:
            yield f"even {value}"


class CoSplit(CoProcessFunction):
    def process_element1(self, value, ctx):
        if value % 2:
            ctx.output(ODD, value)
        else:
            yield f"even {value}"

    def process_element2(self, value, ctx):
        yield f"other {value}"


class KeyedCoSplit(KeyedCoProcessFunction):
    def process_element1(self, value, ctx):
        if value % 2:
            ctx.output(ODD, value)
        else:
            yield f"even {value}"

    def process_element2(self, value, ctx):
        yield f"other {value}"


def _expected_main(kind: str) -> list[str]:
    main = [f"even {v}" for v in DATA if v % 2 == 0]
    if kind in ("co", "keyed_co"):
        main += [f"other {v}" for v in OTHER]
    return sorted(main)


EXPECTED_SIDE = sorted(v for v in DATA if v % 2)


def _split(env, kind: str, typed: bool):
    output_type = Types.STRING() if typed else None
    src = env.from_collection(DATA, type_info=Types.LONG())
    other = env.from_collection(OTHER, type_info=Types.LONG())
    if kind == "process":
        return src.process(Split(), output_type=output_type)
    if kind == "keyed":
        return src.key_by(lambda v: v % 5).process(KeyedSplit(), output_type=output_type)
    if kind == "co":
        return src.connect(other).process(CoSplit(), output_type=output_type)
    return (src.key_by(lambda v: v % 5).connect(other.key_by(lambda v: v % 5))
            .process(KeyedCoSplit(), output_type=output_type))


def _conf(tmp_path) -> dict:
    return {"execution.checkpointing.dir": str(tmp_path / "ckpt")}


@pytest.mark.parametrize("mode", ["BATCH", "STREAMING"])
@pytest.mark.parametrize("typed", [True, False], ids=["output_type", "no_output_type"])
@pytest.mark.parametrize("kind", ["process", "keyed", "co", "keyed_co"])
def test_print_sink_on_the_main_output_gets_no_side_output(env_factory, tmp_path, capsys,
                                                          mode, kind, typed):
    env = env_factory(mode, _conf(tmp_path))
    main = _split(env, kind, typed)
    main.print("main")
    main.get_side_output(ODD).print("side")
    env.execute(f"side outputs {kind}")
    lines = capsys.readouterr().out.splitlines()
    got_main = sorted(line[len("main> "):] for line in lines if line.startswith("main> "))
    got_side = sorted(int(line[len("side> "):]) for line in lines if line.startswith("side> "))
    assert got_main == _expected_main(kind)
    assert got_side == EXPECTED_SIDE


@pytest.mark.parametrize("mode", ["BATCH", "STREAMING"])
def test_collect_delta_and_dataframe_of_the_main_output_get_no_side_output(
        spark, env_factory, tmp_path, mode):
    env = env_factory(mode, _conf(tmp_path))
    main = _split(env, "keyed", typed=True)
    side = main.get_side_output(ODD)
    main.sink_to_delta(str(tmp_path / "main"))
    side.map(lambda v: v, output_type=Types.LONG()).sink_to_delta(str(tmp_path / "side"))
    env.execute("side outputs into Delta")
    got = DeltaTable(str(tmp_path / "main")).to_pyarrow_table().column(0).to_pylist()
    assert sorted(got) == _expected_main("keyed")
    got_side = DeltaTable(str(tmp_path / "side")).to_pyarrow_table().column(0).to_pylist()
    assert sorted(got_side) == EXPECTED_SIDE

    env = env_factory(mode, _conf(tmp_path / "collect"))
    main = _split(env, "keyed", typed=False)
    main.get_side_output(ODD).print()  # the side output is used in the job
    assert sorted(main.execute_and_collect()) == _expected_main("keyed")

    if mode == "BATCH":
        env = env_factory(mode)
        main = _split(env, "process", typed=True)
        main.get_side_output(ODD).print()
        assert sorted(r[0] for r in main.to_dataframe().collect()) == _expected_main("process")
    else:
        env = env_factory(mode, _conf(tmp_path / "df"))
        main = _split(env, "process", typed=True)
        main.get_side_output(ODD).print()
        df = main.to_dataframe()
        query = (df.writeStream.format("memory").queryName("side_output_main")
                 .option("checkpointLocation", str(tmp_path / "df_query"))
                 .trigger(availableNow=True).start())
        query.awaitTermination()
        try:
            rows = spark.sql("SELECT * FROM side_output_main").collect()
        finally:
            spark.catalog.dropTempView("side_output_main")
        assert sorted(r[0] for r in rows) == _expected_main("process")


class TagSides(CoMapFunction):
    def map1(self, value):
        return f"side {value}"

    def map2(self, value):
        return f"main {value}"


@pytest.mark.parametrize("mode", ["BATCH", "STREAMING"])
def test_a_keyed_stages_side_output_connected_with_its_main_output(env_factory, tmp_path, mode):
    """Found by the sweep: in STREAMING, connecting a keyed stage's side output with its main
    output put the stage twice in one query, which Spark refuses ("Multiple
    applyInPandasWithStates are not supported")."""
    env = env_factory(mode, _conf(tmp_path))
    main = _split(env, "keyed", typed=True)
    got = sorted(main.get_side_output(ODD).connect(main).map(TagSides()).execute_and_collect())
    expected = sorted([f"side {v}" for v in EXPECTED_SIDE]
                      + [f"main {m}" for m in _expected_main("keyed")])
    assert got == expected
