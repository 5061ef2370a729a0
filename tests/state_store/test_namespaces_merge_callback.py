"""merge_windows with PyFlink's MergeCallback: the callback hears each merge (members,
covering window) that the call also returns; lone windows merge into nothing."""

from __future__ import annotations

from pyspark_datastream import EventTimeSessionWindows, MergingWindowAssigner, TimeWindow


class Recorder(MergingWindowAssigner.MergeCallback):
    def __init__(self) -> None:
        self.calls: list[tuple[list[TimeWindow], TimeWindow]] = []

    def merge(self, to_be_merged, merge_result):
        self.calls.append((list(to_be_merged), merge_result))


def test_the_callback_hears_each_merge():
    windows = [TimeWindow(0, 10), TimeWindow(5, 15), TimeWindow(30, 40), TimeWindow(14, 20)]
    recorder = Recorder()
    merges = EventTimeSessionWindows.with_gap(10).merge_windows(windows, recorder)
    expected = [(TimeWindow(0, 20), [TimeWindow(0, 10), TimeWindow(5, 15), TimeWindow(14, 20)])]
    assert merges == expected
    assert recorder.calls == [(members, covering) for covering, members in expected]
    assert TimeWindow.merge_windows([TimeWindow(0, 1)], recorder) == []
    assert len(recorder.calls) == 1
