"""The JVM connector jars the suite runs Spark with: Spark's Delta Lake and the ``s3a`` connector.

``make setup`` calls ``python integration_tests/jars.py install`` once: Maven resolves the
artifacts that match the installed pyspark (its Spark line picks the Delta artifact, the
Hadoop client it ships picks ``hadoop-aws``) into ``<venv>/jars``, leaving out every jar
pyspark already ships. Tests and benchmarks then put them on the class path (:func:`delta_spark_conf`):
nothing is downloaded at test or run time.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

__all__ = ["DELTA_VERSION", "jar_dir", "class_path", "delta_spark_conf", "install", "artifacts"]

#: Maven Central's newest Delta release for Spark 4.0-4.2 (the pip package's 4.4.1 has no jars).
DELTA_VERSION = "4.4.0"
_STAMP = ".resolved"


def _pyspark_dir() -> str:
    import pyspark

    return os.path.dirname(os.path.abspath(pyspark.__file__))


def spark_line() -> str:
    """The installed pyspark's ``major.minor`` (e.g. ``4.2``)."""
    import pyspark

    return ".".join(pyspark.__version__.split(".")[:2])


def hadoop_version() -> str:
    """The Hadoop client version pyspark ships (``hadoop-client-api-X.jar``)."""
    found = glob.glob(os.path.join(_pyspark_dir(), "jars", "hadoop-client-api-*.jar"))
    if not found:
        raise SystemExit("pyspark ships no hadoop-client-api jar: cannot pick hadoop-aws")
    return re.sub(r"^hadoop-client-api-|\.jar$", "", os.path.basename(found[0]))


def artifacts() -> list[str]:
    """``group:artifact:version`` of the jars to resolve (with their runtime dependencies)."""
    return [
        f"io.delta:delta-spark_{spark_line()}_2.13:{DELTA_VERSION}",
        f"org.apache.hadoop:hadoop-aws:{hadoop_version()}",
    ]


def jar_dir() -> str:
    """Where ``make setup`` put the jars: ``<venv>/jars``."""
    return os.path.join(sys.prefix, "jars")


def class_path() -> str:
    """The jars as a JVM class path entry (``<venv>/jars/*``); fails plainly when ``make setup``
    has not run. A class path, not ``spark.jars``: every driver and executor of the suite runs on
    this host, so none has to be sent the 700 MB AWS SDK bundle."""
    folder = jar_dir()
    if not glob.glob(os.path.join(folder, "*.jar")) or not os.path.exists(
            os.path.join(folder, _STAMP)):
        raise RuntimeError(f"no connector jars in {folder}: run `make setup`")
    return os.path.join(folder, "*")


def delta_spark_conf() -> dict[str, str]:
    """Spark conf that gives a session the jars and Spark's Delta Lake (extension and catalog)."""
    return {
        "spark.driver.extraClassPath": class_path(),
        "spark.executor.extraClassPath": class_path(),
        "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
    }


def _artifact_name(jar: str) -> str:
    """``delta-storage-4.4.0.jar`` -> ``delta-storage``."""
    return re.sub(r"-\d[\w.\-]*\.jar$", "", os.path.basename(jar))


def _pom(coords: list[str]) -> str:
    deps = []
    for coord in coords:
        group, artifact, version = coord.split(":")
        deps.append(
            f"<dependency><groupId>{group}</groupId><artifactId>{artifact}</artifactId>"
            f"<version>{version}</version><exclusions>"
            "<exclusion><groupId>org.apache.spark</groupId><artifactId>*</artifactId></exclusion>"
            "<exclusion><groupId>org.apache.hadoop</groupId><artifactId>hadoop-client-api"
            "</artifactId></exclusion>"
            "<exclusion><groupId>org.apache.hadoop</groupId><artifactId>hadoop-client-runtime"
            "</artifactId></exclusion></exclusions></dependency>")
    # Jackson modules the Delta jars bring must match the Jackson core pyspark ships.
    jackson = _shipped_version("jackson-databind")
    managed = ("<dependencyManagement><dependencies><dependency><groupId>"
               "com.fasterxml.jackson.datatype</groupId><artifactId>jackson-datatype-jdk8"
               f"</artifactId><version>{jackson}</version></dependency></dependencies>"
               "</dependencyManagement>")
    return ("<project xmlns=\"http://maven.apache.org/POM/4.0.0\"><modelVersion>4.0.0"
            "</modelVersion><groupId>local</groupId><artifactId>suite-jars</artifactId>"
            f"<version>1</version>{managed}<dependencies>{''.join(deps)}</dependencies>"
            "</project>")


def _shipped_version(artifact: str) -> str:
    found = glob.glob(os.path.join(_pyspark_dir(), "jars", f"{artifact}-*.jar"))
    if not found:
        raise SystemExit(f"pyspark ships no {artifact} jar")
    return os.path.basename(found[0])[len(artifact) + 1:-len(".jar")]


def install() -> None:
    """Resolve :func:`artifacts` into :func:`jar_dir`, minus what pyspark ships."""
    folder = jar_dir()
    wanted = "\n".join(artifacts())
    stamp = os.path.join(folder, _STAMP)
    if os.path.exists(stamp) and open(stamp).read() == wanted:
        return
    if shutil.which("mvn") is None:
        raise SystemExit("mvn is not on PATH: it resolves the Delta and s3a jars "
                         "(Debian/Ubuntu: apt-get install maven)")
    shutil.rmtree(folder, ignore_errors=True)
    with tempfile.TemporaryDirectory() as work:
        with open(os.path.join(work, "pom.xml"), "w") as f:
            f.write(_pom(artifacts()))
        staged = os.path.join(work, "jars")
        subprocess.run(["mvn", "-q", "-B", "dependency:copy-dependencies",
                        f"-DoutputDirectory={staged}", "-DincludeScope=runtime"],
                       cwd=work, check=True)
        shipped = {_artifact_name(j) for j in glob.glob(os.path.join(_pyspark_dir(), "jars", "*.jar"))}
        os.makedirs(folder)
        for jar in glob.glob(os.path.join(staged, "*.jar")):
            if _artifact_name(jar) not in shipped:
                shutil.move(jar, os.path.join(folder, os.path.basename(jar)))
    with open(stamp, "w") as f:
        f.write(wanted)
    print(f"connector jars in {folder}:", ", ".join(sorted(os.listdir(folder))))


if __name__ == "__main__":
    if sys.argv[1:] != ["install"]:
        raise SystemExit("usage: python integration_tests/jars.py install")
    install()
