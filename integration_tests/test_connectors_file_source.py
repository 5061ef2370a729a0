"""``FileSource.for_record_stream_format(StreamFormat.text_line_format(), ...)`` through
``env.from_source`` as a PyFlink program uses it: bounded in both modes, monitored
(``monitor_continuously``) in STREAMING across two runs, and its refusals. Inputs are several
files of random lines in nested folders, with hidden files Flink skips; expected word counts
come from plain Python over the lines written."""

from __future__ import annotations

import os
import random
from collections import Counter

import pytest
from helpers import env_for
from pyspark_datastream import (
    Duration,
    FileSource,
    GraphBuildError,
    RuntimeExecutionMode,
    StreamFormat,
    Types,
    UnsupportedConnectorError,
    WatermarkStrategy,
)

WORDS = ["flink", "spark", "file", "line", "state", "key", "window", "part"]


def _write_lines(folder, name: str, seed: int, n: int) -> list[str]:
    """``n`` random lines in ``folder/name`` (written aside and moved in, so a monitoring
    source never sees it half-written); the lines."""
    rng = random.Random(seed)
    lines = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 6))) for _ in range(n)]
    path = os.path.join(str(folder), name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(tmp, path)
    return lines


def _word_count(env, source: FileSource, name: str) -> list[tuple[str, int]]:
    """The program a PyFlink user writes (only the imports differ)."""
    return list(env.from_source(source, WatermarkStrategy.no_watermarks(), "Files")
                .flat_map(lambda line: [(w, 1) for w in line.split()],
                          output_type=Types.TUPLE([Types.STRING(), Types.INT()]))
                .key_by(lambda t: t[0])
                .reduce(lambda a, b: (a[0], a[1] + b[1]))
                .execute_and_collect(name))


def _words(lines: list[str]) -> Counter:
    return Counter(w for line in lines for w in line.split())


@pytest.mark.parametrize("mode", ["BATCH", "STREAMING"])
def test_bounded_source_reads_every_line_of_files_and_nested_folders_once(
        env_factory, tmp_path, mode):
    root, extra = tmp_path / "logs", tmp_path / "single.txt"
    lines = _write_lines(root, "a.txt", 1, 40) + _write_lines(root, "2026/11/b.log", 2, 35)
    lines += _write_lines(root, "2026/12/c", 3, 25) + _write_lines(tmp_path, "single.txt", 4, 10)
    # hidden files: Flink's enumerator (and Spark's) skip them
    _write_lines(root, ".hidden.txt", 5, 20)
    _write_lines(root, "_SUCCESS", 6, 20)
    env = env_for(env_factory, tmp_path, mode, f"files-{mode}")
    every = list(env.from_source(
        FileSource.for_record_stream_format(StreamFormat.text_line_format(), root.as_uri(),
                                            str(extra)).build(),
        WatermarkStrategy.no_watermarks(), "Files").execute_and_collect())
    assert Counter(every) == Counter(lines)  # every line once, without its terminator
    counts = _word_count(env_for(env_factory, tmp_path, mode, f"count-{mode}"),
                         FileSource.for_record_stream_format(StreamFormat.text_line_format(),
                                                             str(root), str(extra)).build(),
                         f"file-word-count-{mode}")
    if mode == "BATCH":  # reduce emits each word's final count
        assert sorted(counts) == sorted(_words(lines).items())
    else:  # every running count, 1..n per word
        assert sorted(counts) == sorted((w, i) for w, n in _words(lines).items()
                                        for i in range(1, n + 1))


def test_monitored_source_reads_new_files_in_the_next_run(env_factory, tmp_path):
    folder = tmp_path / "incoming"
    first = _write_lines(folder, "part-0.txt", 7, 30) + _write_lines(folder, "day/part-1.txt", 8, 20)
    source = (FileSource.for_record_stream_format(StreamFormat.text_line_format(), str(folder))
              .monitor_continuously(Duration.of_seconds(1)).build())
    assert not source.bounded
    counts = _word_count(env_for(env_factory, tmp_path, "STREAMING", "monitor"), source,
                         "file-monitor")
    assert sorted(counts) == sorted((w, i) for w, n in _words(first).items()
                                    for i in range(1, n + 1))
    second = _write_lines(folder, "part-2.txt", 9, 25)
    counts = _word_count(env_for(env_factory, tmp_path, "STREAMING", "monitor"), source,
                         "file-monitor")
    # only the new file is read (the checkpoint lists the files seen), and the counts go on
    # from the state: a file read twice would push them past the totals
    total = _words(first + second)
    assert sorted(counts) == sorted((w, i) for w, n in total.items()
                                    for i in range(_words(first)[w] + 1, n + 1))


def test_monitored_source_in_batch_and_bad_arguments_are_refused(env_factory, tmp_path):
    folder = tmp_path / "in"
    _write_lines(folder, "x.txt", 10, 3)
    builder = FileSource.for_record_stream_format(StreamFormat.text_line_format(), str(folder))
    monitored = builder.monitor_continuously(Duration.of_millis(500)).build()
    env = env_for(env_factory, tmp_path, "BATCH", "refuse")
    with pytest.raises(GraphBuildError, match="'Files'.*unbounded.*monitor_continuously"):
        env.from_source(monitored, WatermarkStrategy.no_watermarks(), "Files")
    env.set_runtime_mode(RuntimeExecutionMode.STREAMING)
    with pytest.raises(GraphBuildError, match="StreamFormat.text_line_format.*INT"):
        env.from_source(monitored, WatermarkStrategy.no_watermarks(), "Files", Types.INT())
    missing = tmp_path / "missing"
    with pytest.raises(GraphBuildError, match="missing.*Spark cannot read it"):
        env.from_source(FileSource.for_record_stream_format(
            StreamFormat.text_line_format(), str(missing)).build(),
            WatermarkStrategy.no_watermarks(), "Files")
    with pytest.raises(GraphBuildError, match="positive Duration"):
        builder.monitor_continuously(Duration.of_millis(0))
    with pytest.raises(GraphBuildError, match="one or more paths"):
        FileSource.for_record_stream_format(StreamFormat.text_line_format())
    with pytest.raises(UnsupportedConnectorError, match="charset 'latin-1'"):
        StreamFormat.text_line_format("latin-1")
    with pytest.raises(UnsupportedConnectorError, match="for_bulk_file_format.*spark.read"):
        FileSource.for_bulk_file_format(object(), str(folder))
    with pytest.raises(UnsupportedConnectorError, match="set_split_assigner"):
        builder.set_split_assigner(object())
