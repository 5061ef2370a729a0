"""Which pyspark the package runs on: the supported Spark lines, checked when the package is
imported (also with pyspark missing or shadowed, in a fresh interpreter), features a line
lacks, and pyspark/pyarrow pairs whose applyInPandasWithState cannot run."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap

import pytest
from pyspark_datastream import (
    ConfigurationError,
    SparkVersionError,
    UnsupportedSparkFeatureError,
)
from pyspark_datastream.spark_io.versions import (
    SPARK_FEATURES,
    SUPPORTED_LINES,
    UNTESTED_SPARK_ENV,
    check_pyspark,
    check_streaming_versions,
    installed_pyspark_version,
    require_feature,
    require_spark_feature,
)


@pytest.mark.parametrize("version,line", [
    ("3.5.0", "3.5"), ("3.5.9", "3.5"), ("4.0.5", "4.0"), ("4.1.4", "4.1"), ("4.2.0", "4.2"),
    ("4.2.1", "4.2"), ("4.2.7", "4.2"), ("4.3.0", "4.3"), ("4.3.1.dev0", "4.3"),
    ("3.5.2+databricks", "3.5"),
])
def test_every_patch_of_a_supported_line_passes(version, line):
    assert check_pyspark(version) == line


@pytest.mark.parametrize("version", ["3.4.1", "3.3.0", "2.4.8", "4.4.0", "5.0.0"])
def test_other_lines_are_refused_naming_the_version_the_lines_and_the_install(version, monkeypatch):
    monkeypatch.delenv(UNTESTED_SPARK_ENV, raising=False)
    with pytest.raises(SparkVersionError) as info:
        check_pyspark(version)
    text = str(info.value)
    assert f"pyspark is {version}" in text and ", ".join(SUPPORTED_LINES) in text
    assert "pip install 'pyspark-datastream[spark]'" in text and UNTESTED_SPARK_ENV in text
    assert isinstance(info.value, ImportError) and isinstance(info.value, ConfigurationError)


def test_an_untested_line_runs_when_asked_and_says_so(monkeypatch):
    monkeypatch.setenv(UNTESTED_SPARK_ENV, "1")
    with pytest.warns(RuntimeWarning, match=r"4\.4\.0 \(line 4\.4\).*untested"):
        assert check_pyspark("4.4.0") == "4.4"


def test_the_installed_version_is_read_without_importing_pyspark():
    code = ("import sys; from pyspark_datastream.spark_io.versions import "
            "installed_pyspark_version as v; print(v(), 'pyspark' in sys.modules)")
    # the package root imports pyspark lazily; a fresh interpreter shows what the check loads
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    import pyspark

    assert out == [pyspark.__version__, "False"] and installed_pyspark_version() == out[0]


def _import_in(tmp_path, prelude: str) -> subprocess.CompletedProcess:
    script = tmp_path / "probe.py"
    script.write_text(textwrap.dedent(prelude) + textwrap.dedent("""
        try:
            import pyspark_datastream
        except Exception as exc:
            print(type(exc).__name__, isinstance(exc, ImportError), exc)
        else:
            print("imported")
    """))
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          cwd=tmp_path, timeout=120)


def test_importing_without_pyspark_raises_a_typed_import_error(tmp_path):
    # as in an environment without pyspark: site-packages off the path (the package itself
    # stays importable through its editable-install finder or its own folder)
    proc = _import_in(tmp_path, """
        import sys
        import pyspark_datastream.spark_io  # noqa: F401  (locates the package first)
        for name in [m for m in sys.modules if m.startswith("pyspark_datastream")]:
            del sys.modules[name]
        sys.path[:] = [p for p in sys.path if "site-packages" not in p]
    """)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("SparkVersionError True pyspark_datastream needs pyspark"), \
        proc.stdout + proc.stderr
    assert "none is importable" in proc.stdout and "[spark]" in proc.stdout


def test_importing_with_an_unsupported_pyspark_first_on_the_path_names_it(tmp_path):
    # a runtime's own pyspark ahead of pip's (as Databricks Runtime puts it on PYTHONPATH)
    fake = tmp_path / "runtime" / "pyspark"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('the check must not import pyspark')\n")
    (fake / "version.py").write_text('__version__: str = "3.4.1"\n')
    proc = _import_in(tmp_path, f"""
        import sys
        sys.path.insert(0, {str(fake.parent)!r})
    """)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("SparkVersionError True"), proc.stdout + proc.stderr
    assert "the importable pyspark is 3.4.1 (line 3.4)" in proc.stdout


def test_a_feature_newer_than_the_line_is_refused_naming_both():
    with pytest.raises(UnsupportedSparkFeatureError,
                       match=r"groupBy\(\)\.applyInArrow needs Spark 4\.0 or newer; this "
                             r"session runs Spark 3\.5\.0 \(line 3\.5\)"):
        require_spark_feature("groupBy().applyInArrow", "4.0", "3.5.0")
    require_spark_feature("groupBy().applyInArrow", "4.0", "4.0.0")
    require_spark_feature("groupBy().applyInArrow", "4.0", "4.3.0")


def test_the_streaming_savepoint_is_refused_on_3_5_only_saying_why_and_what_instead():
    assert SPARK_FEATURES["streaming_savepoint"][1] == "4.0"
    for version in ("3.5.0", "3.5.2+databricks", "3.5.9"):
        with pytest.raises(UnsupportedSparkFeatureError,
                           match=rf"a STREAMING savepoint needs Spark 4\.0 or newer; this session "
                                 rf"runs Spark {re.escape(version)} \(line 3\.5\).*"
                                 r"format\(\"statestore\"\).*from a BATCH run"):
            require_feature("streaming_savepoint", version)
    for version in ("4.0.0", "4.2.1", "4.3.0"):
        require_feature("streaming_savepoint", version)


@pytest.mark.parametrize("pyspark,pyarrow,fixed", [
    ("4.0.1", "26.0.1", "4.0.5"), ("4.0.4", "26.0.0", "4.0.5"), ("4.0.0", "27.1.0", "4.0.5"),
    ("4.1.0", "26.0.1", "4.1.4"), ("4.1.3", "26.0.1", "4.1.4"), ("4.1.3.dev1", "26.0.0", "4.1.4"),
])
def test_affected_pairs_are_refused_naming_the_fix(pyspark, pyarrow, fixed):
    with pytest.raises(ConfigurationError, match=rf"pyspark {pyspark} with pyarrow {pyarrow}.*"
                                                 rf"pyspark>={fixed}.*pyarrow<26"):
        check_streaming_versions(pyspark, pyarrow)


@pytest.mark.parametrize("pyspark,pyarrow", [
    ("4.0.1", "25.0.1"), ("4.0.5", "26.0.1"), ("4.1.3", "25.0.0"), ("4.1.4", "26.0.1"),
    ("4.2.0", "26.0.1"), ("4.0.1", "14.0.2"),
])
def test_working_pairs_pass(pyspark, pyarrow):
    check_streaming_versions(pyspark, pyarrow)


def test_the_installed_pair_is_checked():
    import pyarrow
    import pyspark

    spark = tuple(int(p) for p in pyspark.__version__.split(".")[:3])
    bad = ((4, 0) <= spark < (4, 0, 5) or (4, 1) <= spark < (4, 1, 4)) and int(
        pyarrow.__version__.split(".")[0]) >= 26
    if bad:
        with pytest.raises(ConfigurationError):
            check_streaming_versions()
    else:
        check_streaming_versions()


def test_a_pyspark_inside_a_zip_is_read_too(tmp_path):
    # Spark's Python workers import pyspark from pyspark.zip
    import zipfile

    archive = tmp_path / "pyspark.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("pyspark/__init__.py", "raise ImportError('not to be imported')\n")
        z.writestr("pyspark/version.py", '__version__: str = "3.4.4"\n')
    proc = _import_in(tmp_path, f"""
        import sys
        sys.path.insert(0, {str(archive)!r})
    """)
    assert proc.returncode == 0, proc.stderr
    assert "SparkVersionError True" in proc.stdout and "pyspark is 3.4.4" in proc.stdout, \
        proc.stdout + proc.stderr
