"""Peak memory of the Python workers: STREAMING against BATCH, and STREAMING as keys grow.

``python -m benchmarks.memory [--records 4000000] [--keys 400000] [--more-keys 4000000]
[--stage-records 4000000]``
runs ``benchmarks.wordcount`` three times, each in its own process (so no Python worker
carries memory over from another mode): ``--batch-only`` and ``--streaming-only`` at
``--keys``, and ``--streaming-only`` at ``--more-keys``, all over ``--records`` records and
with ``--repeat 1`` (an untimed round, then a timed one). Then the three-keyed-stage job of
``benchmarks.routes`` over ``--stage-records`` records, twice, each alone in its own process
(one timed run): in BATCH, and in STREAMING on the one-query mapping. Each run samples the
summed peak RSS of its Python workers (the daemon and every worker it forked) every 0.25 s.

The last line is JSON: each run's ``python_workers_mib``, ``streaming_over_batch``
(STREAMING's peak over BATCH's at ``--keys``), ``streaming_keys_growth`` (STREAMING's peak at
``--more-keys`` over its peak at ``--keys``) and ``three_stages_streaming_over_batch``, with
their targets. Each run's own results are checked against pandas, as both benchmarks always
do. ``--quick``: 20,000 records, 2,000 and 20,000 keys, the three stages over 4,000 records
in 2 files, the timed round only (``--no-warmup``), two processes at a time: a smoke run
whose figures mean nothing. ``--only wordcount`` or ``--only three_stages``: that part's
processes and figures alone.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any

#: STREAMING's workers at most twice BATCH's; flat as keys grow tenfold (within 25%)
TARGETS = {"streaming_over_batch": 2.0, "streaming_keys_growth": 1.25,
           "three_stages_streaming_over_batch": 2.0}
#: each figure: (its numerator's run, its denominator's run)
FIGURES = {"streaming_over_batch": ("streaming", "batch"),
           "streaming_keys_growth": ("streaming_more_keys", "streaming"),
           "three_stages_streaming_over_batch": ("three_stages_streaming", "three_stages_batch")}
PARTS = {"wordcount": ("batch", "streaming", "streaming_more_keys"),
         "three_stages": ("three_stages_batch", "three_stages_streaming")}


def figures(mib: dict[str, float]) -> dict[str, float]:
    """The ratios of the runs' Python-worker peaks, each where both of its runs ran.

    Args:
        mib: run name -> its Python workers' peak MiB.

    Returns:
        figure name -> the ratio, rounded to three places.
    """
    return {name: round(mib[top] / mib[bottom], 3) for name, (top, bottom) in FIGURES.items()
            if top in mib and bottom in mib}


def run_process(flags: list[str], module: str = "benchmarks.wordcount") -> dict[str, Any]:
    """One ``benchmarks.wordcount`` (or ``module``) process; its JSON line.

    Args:
        flags: its command-line arguments.
        module: the benchmark to run.

    Returns:
        The JSON object it printed last.

    Raises:
        SystemExit: it failed (its output is shown).
    """
    command = [sys.executable, "-m", module, *flags]
    done = subprocess.run(command, capture_output=True, text=True,
                          cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines or not lines[-1].startswith("{"):
        sys.stderr.write(done.stdout[-4000:] + done.stderr[-4000:])
        raise SystemExit(f"{' '.join(command)} failed with exit code {done.returncode}")
    print(lines[-2] if len(lines) > 1 else lines[-1], flush=True)
    return json.loads(lines[-1])


def main(argv: list[str] | None = None) -> None:
    """Run the three measurements and print the JSON line.

    Args:
        argv: the command line's arguments (default: ``sys.argv[1:]``).
    """
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=4_000_000)
    parser.add_argument("--keys", type=int, default=400_000)
    parser.add_argument("--more-keys", type=int, default=4_000_000)
    parser.add_argument("--stage-records", type=int, default=4_000_000,
                        help="records of the three-keyed-stage job (benchmarks.routes)")
    parser.add_argument("--data", default=".bench-data")
    parser.add_argument("--quick", action="store_true",
                        help="20,000 records, 2,000 and 20,000 keys, no untimed round (a smoke run)")
    parser.add_argument("--only", choices=sorted(PARTS),
                        help="one part's processes and figures (default: both)")
    args = parser.parse_args(argv)
    if args.quick:
        args.records, args.keys, args.more_keys = 20_000, 2_000, 20_000
        args.stage_records = 4_000
    common = ["--records", str(args.records), "--repeat", "1", "--data", args.data,
              # a smoke run's figures mean nothing: no untimed round before the timed one
              *(["--no-warmup"] if args.quick else [])]
    stages = ["--records", str(args.stage_records), "--users", str(args.stage_records // 10),
              "--data", args.data, "--no-warmup", *(["--files", "2"] if args.quick else [])]
    commands: dict[str, tuple[list[str], str]] = {
        "batch": ([*common, "--keys", str(args.keys), "--batch-only"], "benchmarks.wordcount"),
        "streaming": ([*common, "--keys", str(args.keys), "--streaming-only"],
                      "benchmarks.wordcount"),
        "streaming_more_keys": ([*common, "--keys", str(args.more_keys), "--streaming-only"],
                                "benchmarks.wordcount"),
        "three_stages_batch": ([*stages, "--alone", "batch"], "benchmarks.routes"),
        "three_stages_streaming": ([*stages, "--alone", "streaming_one_query"],
                                   "benchmarks.routes"),
    }
    # each process samples its own workers; a smoke run's figures mean nothing, so --quick
    # runs two processes at a time (a measurement runs each alone), the first of each data
    # set (which generates it) before the others that read it
    chosen = set(PARTS[args.only] if args.only else commands)
    runs: dict[str, dict[str, Any]] = {}
    with ThreadPoolExecutor(max_workers=2 if args.quick else 1) as pool:
        for wave in (["batch", "three_stages_batch"],
                     ["streaming", "streaming_more_keys", "three_stages_streaming"]):
            futures = {name: pool.submit(run_process, *commands[name])
                       for name in wave if name in chosen}
            runs.update((name, future.result()) for name, future in futures.items())
    runs = {name: runs[name] for name in commands if name in runs}
    mib = {name: run["peak_rss_mib"]["python_workers"] for name, run in runs.items()}
    ratios = figures(mib)
    result = {
        "benchmark": "memory", "records": args.records, "keys": args.keys,
        "more_keys": args.more_keys, "quick": args.quick,
        "python_workers_mib": mib,
        **ratios,
        "targets": TARGETS,
        "targets_met": {name: ratios[name] <= limit for name, limit in TARGETS.items()
                        if name in ratios},
        # per variant of each run, and the seconds of its timed run
        "peak_rss_mib_by_variant": {name: run["peak_rss_mib_by_variant"]
                                    for name, run in runs.items()
                                    if "peak_rss_mib_by_variant" in run},
        "runs": {name: run["runs"] for name, run in runs.items()},
        "load": [round(x, 2) for x in os.getloadavg()],
    }
    print("Python workers, peak MiB: " + ", ".join(f"{name} {value}"
                                                   for name, value in mib.items()))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
