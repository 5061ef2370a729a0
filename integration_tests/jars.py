"""The JVM jars the suite runs with: Spark's Delta Lake, the ``s3a`` and Kafka connectors,
and a Kafka broker.

``make setup`` calls ``python integration_tests/jars.py install`` once: Maven resolves the
artifacts that match the installed pyspark into ``<venv>/jars``, leaving out every jar pyspark
already ships. The Spark line picks the Delta artifact and the Scala suffix
(:data:`DELTA_ARTIFACTS`, an older release for a line's early patches: :data:`DELTA_BEFORE`),
the Hadoop client pyspark ships picks ``hadoop-aws``, and
``spark-sql-kafka-0-10`` is taken at pyspark's version or, when Maven Central lacks that
patch (or its token provider), at the newest patch of the line it has with both. A line
whose Delta or Kafka artifact is not on Maven Central gets none: the stamp file records
which connectors were resolved (:func:`available`), and the tests of Spark's Delta or Kafka
skip there, saying why. Tests and benchmarks then put them on the class path
(:func:`delta_spark_conf`). The Kafka broker (``kafka_2.13`` at the version of the
``kafka-clients`` the connector uses) goes into ``<venv>/kafka-broker``, a folder of its own
that never joins Spark's class path (:func:`broker_class_path`). Where pyspark ships no
Spark Connect server (3.5's pip package), ``spark-connect`` at pyspark's version goes into
``<venv>/connect-server`` for a local Connect session's ``--jars``
(:func:`connect_server_jars`). Nothing is downloaded at test or run time.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

__all__ = ["DELTA_ARTIFACTS", "DELTA_BEFORE", "delta_artifact", "jar_dir", "class_path",
           "delta_spark_conf", "install", "artifacts", "available", "broker_dir",
           "broker_class_path", "kafka_clients_version", "connect_server_dir",
           "connect_server_jars"]

#: Spark's Delta Lake per Spark line, as Maven Central names it (since Delta 4.1 the artifact
#: carries the Spark line; 3.3.x is the last release for Spark 3.5, Scala 2.12). A line
#: missing here, or whose artifact Maven Central does not have yet, runs without Spark's
#: Delta (the product's Delta sink and source then use delta-rs).
DELTA_ARTIFACTS = {
    "3.5": "io.delta:delta-spark_2.12:3.3.3",
    "4.0": "io.delta:delta-spark_4.0_2.13:4.4.0",
    "4.1": "io.delta:delta-spark_4.1_2.13:4.4.0",
    "4.2": "io.delta:delta-spark_4.2_2.13:4.4.0",
    "4.3": "io.delta:delta-spark_4.3_2.13:4.4.0",
}
#: Older patches of a line that need an older Delta release: ``{line: (first patch the
#: line's artifact runs on, the artifact below it)}``. Delta 3.3.x calls Spark classes that
#: 3.5.3 added (on 3.5.0 every query fails with ``NoClassDefFoundError:
#: SupportsNonDeterministicExpression``); 3.2.0 is the last release for Spark 3.5.0-3.5.2.
DELTA_BEFORE = {
    "3.5": ("3.5.3", "io.delta:delta-spark_2.12:3.2.0"),
}
_CENTRAL = "https://repo.maven.apache.org/maven2"
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


def scala_version() -> str:
    """The Scala binary version of the installed pyspark's jars (``2.12`` or ``2.13``)."""
    found = glob.glob(os.path.join(_pyspark_dir(), "jars", "spark-core_*.jar"))
    if not found:
        raise SystemExit("pyspark ships no spark-core jar: cannot tell its Scala version")
    return re.sub(r"^spark-core_|-.*$", "", os.path.basename(found[0]))


def _on_central(coord: str) -> bool:
    """Whether Maven Central serves ``group:artifact:version``'s POM (only ``install`` asks)."""
    import urllib.error
    import urllib.request

    group, artifact, version = coord.split(":")
    url = f"{_CENTRAL}/{group.replace('.', '/')}/{artifact}/{version}/{artifact}-{version}.pom"
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=60):
            return True
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return False
        raise


def _kafka_candidates() -> list[str]:
    """``spark-sql-kafka-0-10`` at pyspark's version first, then the line's other patches,
    newest first (a connector of the same line runs on any of its patches)."""
    import pyspark

    version = pyspark.__version__.split("+")[0]
    major, minor, patch = (int(p) for p in version.split(".")[:3])
    versions = [version] + [f"{major}.{minor}.{p}" for p in range(max(patch, 9), -1, -1)
                            if p != patch]
    return [f"org.apache.spark:spark-sql-kafka-0-10_{scala_version()}:{v}" for v in versions]


def _kafka_on_central(coord: str) -> bool:
    """Whether Maven Central has the connector ``coord`` and the Spark module it needs at
    its own version, ``spark-token-provider-kafka-0-10`` (Central has patches of the
    connector whose token provider it lacks, e.g. 4.0.1-4.0.4: Maven then fails on them)."""
    token = coord.replace(":spark-sql-kafka-0-10_", ":spark-token-provider-kafka-0-10_")
    return _on_central(coord) and _on_central(token)


def _release(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", version.split("+")[0])[:3])


def delta_artifact() -> str | None:
    """Spark's Delta for the installed pyspark: the line's (:data:`DELTA_ARTIFACTS`), or an
    older release for the line's early patches (:data:`DELTA_BEFORE`); None for no line known."""
    import pyspark

    line = spark_line()
    before = DELTA_BEFORE.get(line)
    if before and _release(pyspark.__version__) < _release(before[0]):
        return before[1]
    return DELTA_ARTIFACTS.get(line)


def artifacts(kafka: bool = True) -> list[str]:
    """``group:artifact:version`` of the jars to resolve for the installed pyspark (with their
    runtime dependencies), as far as Maven Central has them: Spark's Delta for the line
    (:data:`DELTA_ARTIFACTS`), ``hadoop-aws``, and with ``kafka`` Spark's Kafka connector."""
    coords = [f"org.apache.hadoop:hadoop-aws:{hadoop_version()}"]
    delta = delta_artifact()
    if delta and _on_central(delta):
        coords.insert(0, delta)
    else:
        print(f"  Spark {spark_line()}: no Delta Lake artifact on Maven Central "
              f"({delta or 'none known'}); Spark's Delta is left out")
    if kafka:
        # Spark's Kafka source and sink; brings kafka-clients, commons-pool2 and
        # spark-token-provider-kafka-0-10 (Spark's own modules are `provided`)
        found = next((c for c in _kafka_candidates() if _kafka_on_central(c)), None)
        if found is None:
            print(f"  Spark {spark_line()}: no spark-sql-kafka-0-10 of the line on Maven "
                  "Central; Spark's Kafka connector is left out")
        else:
            coords.append(found)
    return coords


def available() -> dict[str, bool]:
    """Which connectors ``make setup`` resolved into :func:`jar_dir`: ``{"delta": ...,
    "kafka": ...}`` (from the stamp file; all false before ``make setup``)."""
    stamp = os.path.join(jar_dir(), _STAMP)
    text = open(stamp).read() if os.path.exists(stamp) else ""
    return {"delta": "io.delta:" in text, "kafka": "spark-sql-kafka-0-10" in text}


def broker_artifact(clients_version: str) -> str:
    """The Kafka broker (``kafka.Kafka``, KRaft) at ``clients_version``."""
    return f"org.apache.kafka:kafka_2.13:{clients_version}"


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


def broker_dir() -> str:
    """Where ``make setup`` put the Kafka broker's jars: ``<venv>/kafka-broker``."""
    return os.path.join(sys.prefix, "kafka-broker")


def broker_class_path() -> str:
    """The broker's jars as a JVM class path entry; fails plainly without ``make setup``."""
    folder = broker_dir()
    if not glob.glob(os.path.join(folder, "*.jar")) or not os.path.exists(
            os.path.join(folder, _STAMP)):
        raise RuntimeError(f"no Kafka broker jars in {folder}: run `make setup`")
    return os.path.join(folder, "*")


def kafka_clients_version(folder: str | None = None) -> str:
    """The ``kafka-clients`` version Spark's Kafka connector brought into ``folder``
    (default :func:`jar_dir`)."""
    found = glob.glob(os.path.join(folder or jar_dir(), "kafka-clients-*.jar"))
    if len(found) != 1:
        raise SystemExit(f"expected one kafka-clients jar in {folder or jar_dir()}, got {found}")
    return re.sub(r"^kafka-clients-|\.jar$", "", os.path.basename(found[0]))


def delta_spark_conf() -> dict[str, str]:
    """Spark conf that gives a session the jars and, where ``make setup`` resolved it
    (:func:`available`), Spark's Delta Lake (extension and catalog): without its jars the
    Delta catalog fails every query of the session (``CATALOG_PLUGIN_CLASS_NOT_FOUND``)."""
    conf = {
        "spark.driver.extraClassPath": class_path(),
        "spark.executor.extraClassPath": class_path(),
    }
    if available()["delta"]:
        conf["spark.sql.extensions"] = "io.delta.sql.DeltaSparkSessionExtension"
        conf["spark.sql.catalog.spark_catalog"] = "org.apache.spark.sql.delta.catalog.DeltaCatalog"
    return conf


def _artifact_name(jar: str) -> str:
    """``delta-storage-4.4.0.jar`` -> ``delta-storage``."""
    return re.sub(r"-\d[\w.\-]*\.jar$", "", os.path.basename(jar))


def _pom(coords: list[str], for_spark: bool = True) -> str:
    """A pom depending on ``coords``; ``for_spark``: without what pyspark provides (Spark's
    modules, the Hadoop client) and with Jackson modules at pyspark's Jackson version."""
    deps = []
    for coord in coords:
        group, artifact, version = coord.split(":")
        exclusions = ""
        if for_spark:
            # Spark's modules come with pyspark, except the Kafka connector's own token
            # provider (the connector declares Spark's core modules `provided`)
            if group != "org.apache.spark":
                exclusions += ("<exclusion><groupId>org.apache.spark</groupId>"
                               "<artifactId>*</artifactId></exclusion>")
            exclusions += (
                "<exclusion><groupId>org.apache.hadoop</groupId><artifactId>hadoop-client-api"
                "</artifactId></exclusion>"
                "<exclusion><groupId>org.apache.hadoop</groupId><artifactId>"
                "hadoop-client-runtime</artifactId></exclusion>")
        deps.append(
            f"<dependency><groupId>{group}</groupId><artifactId>{artifact}</artifactId>"
            f"<version>{version}</version><exclusions>{exclusions}</exclusions></dependency>")
    managed = ""
    if for_spark:
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


# Spark's parent POMs (4.0.x) declare a Google-hosted mirror of Maven Central ahead of
# Central itself; where that host does not resolve, Maven fails on it instead of falling
# through. These global settings send every repository to Maven Central (a user's own
# ~/.m2/settings.xml, e.g. a company mirror, still takes precedence over them).
_SETTINGS = ("<settings xmlns=\"http://maven.apache.org/SETTINGS/1.0.0\"><mirrors><mirror>"
             "<id>maven-central-only</id><mirrorOf>*</mirrorOf>"
             "<url>https://repo.maven.apache.org/maven2</url></mirror></mirrors></settings>")


def _resolve(coords: list[str], for_spark: bool, into: str) -> None:
    """Maven's runtime closure of ``coords`` copied into the folder ``into``."""
    if shutil.which("mvn") is None:
        raise SystemExit("mvn is not on PATH: it resolves the Delta, s3a and Kafka jars "
                         "(Debian/Ubuntu: apt-get install maven)")
    work = os.path.dirname(into)
    with open(os.path.join(work, "pom.xml"), "w") as f:
        f.write(_pom(coords, for_spark))
    with open(os.path.join(work, "settings.xml"), "w") as f:
        f.write(_SETTINGS)
    subprocess.run(["mvn", "-q", "-B", "-gs", os.path.join(work, "settings.xml"),
                    "dependency:copy-dependencies",
                    f"-DoutputDirectory={into}", "-DincludeScope=runtime"],
                   cwd=work, check=True)


def _install_connectors(folder: str, coords: list[str]) -> None:
    """``coords`` (:func:`artifacts`) into ``folder``, minus every jar pyspark ships; a jar pyspark ships
    at another version than the connectors ask for is reported (pyspark's wins), and
    pyspark must ship no Kafka client of its own (two would clash on one class path)."""
    shipped = {_artifact_name(j): os.path.basename(j)
               for j in glob.glob(os.path.join(_pyspark_dir(), "jars", "*.jar"))}
    if any(name.startswith("kafka-clients") for name in shipped):
        raise SystemExit("pyspark ships a kafka-clients jar: Spark's Kafka connector would "
                         "put a second one on the class path")
    with tempfile.TemporaryDirectory() as work:
        staged = os.path.join(work, "jars")
        _resolve(coords, True, staged)
        os.makedirs(folder)
        for jar in sorted(glob.glob(os.path.join(staged, "*.jar"))):
            name = os.path.basename(jar)
            if _artifact_name(jar) not in shipped:
                shutil.move(jar, os.path.join(folder, name))
            elif shipped[_artifact_name(jar)] != name:
                print(f"  {name}: pyspark ships {shipped[_artifact_name(jar)]}, which is used")


def _install_broker(folder: str, clients_version: str) -> None:
    """The Kafka broker at ``clients_version`` with all its runtime jars into ``folder``."""
    with tempfile.TemporaryDirectory() as work:
        staged = os.path.join(work, "jars")
        _resolve([broker_artifact(clients_version)], False, staged)
        shutil.move(staged, folder)


def connect_server_dir() -> str:
    """Where ``make setup`` put Spark Connect's server for a pyspark that ships none:
    ``<venv>/connect-server``."""
    return os.path.join(sys.prefix, "connect-server")


def connect_server_jars() -> list[str]:
    """The Spark Connect server jars a local ``remote("local[2]")`` session must be started
    with (``--jars``): none where pyspark ships the server (4.0+), else those ``make setup``
    resolved (3.5's pip package has no ``spark-connect`` jar)."""
    if glob.glob(os.path.join(_pyspark_dir(), "jars", "spark-connect_*.jar")):
        return []
    found = sorted(glob.glob(os.path.join(connect_server_dir(), "*.jar")))
    if not found:
        raise RuntimeError(f"pyspark ships no Spark Connect server and {connect_server_dir()} "
                           "has none: run `make setup`")
    return found


def _install_connect_server() -> None:
    """``org.apache.spark:spark-connect`` at pyspark's version into
    :func:`connect_server_dir` when pyspark ships no Connect server (3.5): its jar shades
    gRPC and its Guava, so it goes on ``--jars``, never on the class path before Spark's
    own jars (there its Guava classes hide Spark's: ``NoClassDefFoundError:
    InternalFutureFailureAccess``)."""
    import pyspark

    if glob.glob(os.path.join(_pyspark_dir(), "jars", "spark-connect_*.jar")):
        return
    folder = connect_server_dir()
    wanted = f"org.apache.spark:spark-connect_{scala_version()}:{pyspark.__version__}"
    stamp = os.path.join(folder, _STAMP)
    if os.path.exists(stamp) and open(stamp).read() == wanted:
        return
    shutil.rmtree(folder, ignore_errors=True)
    _install_connectors(folder, [wanted])
    with open(stamp, "w") as f:
        f.write(wanted)
    print(f"Spark Connect server {wanted} in {folder}:", ", ".join(sorted(os.listdir(folder))))


def install(kafka: bool = True) -> None:
    """Resolve :func:`artifacts` into :func:`jar_dir` (minus what pyspark ships), then, when
    Spark's Kafka connector was among them, the Kafka broker matching the connector's
    ``kafka-clients`` into :func:`broker_dir`."""
    folder = jar_dir()
    coords = artifacts(kafka)
    wanted = "\n".join(coords)
    stamp = os.path.join(folder, _STAMP)
    if not (os.path.exists(stamp) and open(stamp).read() == wanted):
        shutil.rmtree(folder, ignore_errors=True)
        _install_connectors(folder, coords)
        with open(stamp, "w") as f:
            f.write(wanted)
        print(f"connector jars in {folder}:", ", ".join(sorted(os.listdir(folder))))
    _install_connect_server()
    if not any(":spark-sql-kafka-0-10_" in c for c in coords):
        return  # no connector for the line (artifacts() said so): no broker to match it
    broker = broker_dir()
    wanted = broker_artifact(kafka_clients_version())
    stamp = os.path.join(broker, _STAMP)
    if not (os.path.exists(stamp) and open(stamp).read() == wanted):
        shutil.rmtree(broker, ignore_errors=True)
        _install_broker(broker, kafka_clients_version())
        with open(stamp, "w") as f:
            f.write(wanted)
        print(f"Kafka broker {wanted}: {len(os.listdir(broker)) - 1} jars in {broker}")


if __name__ == "__main__":
    if sys.argv[1:] not in (["install"], ["install", "--without-kafka"]):
        raise SystemExit("usage: python integration_tests/jars.py install [--without-kafka]")
    install(kafka=sys.argv[2:] != ["--without-kafka"])
