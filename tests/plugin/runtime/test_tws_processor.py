"""The one-query processor as Spark ships it: pickled once, unpickled in the driver process
that only runs ``init`` for the state variables (which must not load the stage's functions
or their modules, nor the runtime's) and in the tasks (which run the stage)."""

from __future__ import annotations

import importlib
import os
import pickle
import subprocess
import sys
import textwrap

from pyspark import cloudpickle
from pyspark_datastream.operators.functions import as_reduce_function
from pyspark_datastream.runtime.group_state import GroupSpec
from pyspark_datastream.runtime.tws_processor import KeyGroupProcessor, TwsCall
from pyspark_datastream.state_store.serializers import GenericKeySerializer

USER_MODULE = "pds_user_functions_for_tws"


def _pickled(folder, times: int = 1) -> bytes:
    """A processor pickled ``times`` times over (unpickled between), whose stage reduces
    with a function of a module of the user's in ``folder``: pickled by reference, so
    unpickling the function imports that module."""
    with open(os.path.join(folder, f"{USER_MODULE}.py"), "w", encoding="utf-8") as f:
        f.write(textwrap.dedent("""
            def add(a, b):
                return (a[0], a[1] + b[1])
        """))
    sys.path.insert(0, str(folder))
    try:
        module = importlib.import_module(USER_MODULE)
        spec = GroupSpec("sums", "reduce", as_reduce_function(module.add),
                         GenericKeySerializer.INSTANCE, {"max_parallelism": 8}, False, False,
                         frozenset())
        blob = cloudpickle.dumps(KeyGroupProcessor(spec, TwsCall("None", ("a", "b"), "kg_sums_0")))
        for _ in range(times - 1):
            blob = cloudpickle.dumps(pickle.loads(blob))
        return blob
    finally:
        sys.path.remove(str(folder))
        sys.modules.pop(USER_MODULE, None)


_CHILD = """
import pickle, sys
processor = pickle.loads(sys.stdin.buffer.read())

class Handle:
    def getValueState(self, name, schema):
        self.asked = (name, schema)
        return object()

handle = Handle()
processor.init(handle)
print(handle.asked[0], {module!r} in sys.modules,
      [m for m in ("pyarrow", "numpy", "pandas") if m in sys.modules])
reduce = processor.spec.function
print(reduce.reduce(("k", 1), ("k", 2)), {module!r} in sys.modules)
"""


def test_init_leaves_the_stage_and_its_modules_unread_and_a_call_reads_them(tmp_path):
    blob = _pickled(tmp_path)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (str(tmp_path), os.environ.get("PYTHONPATH", "")) if p))
    out = subprocess.run([sys.executable, "-c", _CHILD.format(module=USER_MODULE)],
                         input=blob, capture_output=True, check=True, env=env, timeout=120)
    lines = out.stdout.decode().splitlines()
    # neither the stage's modules nor the runtime's (pyarrow, numpy, pandas) for init
    assert lines == ["kg_sums_0 False []", "('k', 3) True"], out.stderr.decode()[-2000:]


def test_a_processor_pickled_twice_keeps_its_stage(tmp_path):
    blob = _pickled(tmp_path, times=2)
    sys.path.insert(0, str(tmp_path))
    try:
        again = pickle.loads(blob)
        assert USER_MODULE not in sys.modules  # not read yet
        assert again.spec.function.reduce(("k", 2), ("k", 5)) == ("k", 7)
        assert again.spec.name == "sums" and again.state_name == "kg_sums_0"
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop(USER_MODULE, None)
