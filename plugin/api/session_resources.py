"""The environment's session resources: jars, the workers' Python and shipped files
(Spark's ``spark.jars``, ``spark.pyspark.python``, ``addPyFile``/``addArchive``)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Optional, Self

from ..state_store.exceptions import ConfigurationError
from .checkpointing import ExecutionConfig
from .restart_strategies import RestartStrategyCalls

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


__all__ = ["SessionResources"]


class SessionResources(RestartStrategyCalls):
    """PyFlink's jar and Python-environment calls of ``StreamExecutionEnvironment``: they
    apply to the session the environment starts, or ship files to a running one."""

    _config: ExecutionConfig
    _spark: Optional[SparkSession]
    _py_files: list[tuple[str, str]]

    @property
    def spark(self) -> SparkSession:  # provided by StreamExecutionEnvironment
        """The environment's SparkSession."""
        raise NotImplementedError

    def _session_conf(self) -> dict[str, str]:
        conf: dict[str, str] = {}
        jars = [j for key in ("pipeline.jars", "pipeline.classpaths")
                for j in (self._config.get_string(key) or "").split(";") if j]
        if jars:
            conf["spark.jars"] = ",".join(jars)
        python = self._config.get_string("python.executable")
        if python:
            conf["spark.pyspark.python"] = python
        conf.update(self._restart_conf())
        return conf

    def _running_session(self) -> Optional[SparkSession]:
        if self._spark is not None:
            return self._spark
        from pyspark.sql import SparkSession

        return SparkSession.getActiveSession()

    def _before_session(self, what: str, key: str, spark_setting: str, values: list[str]) -> None:
        """Keep ``values`` under ``key`` for the session this environment will start."""
        if self._running_session() is not None:
            raise ConfigurationError(
                f"{what}: the Spark session is already running and takes {spark_setting} only "
                f"when it starts; set {spark_setting} when building the session")
        current = [v for v in (self._config.get_string(key) or "").split(";") if v]
        self._config.set_string(key, ";".join(current + values))

    @staticmethod
    def _paths(what: str, paths: tuple[Any, ...]) -> list[str]:
        bad = [p for p in paths if not isinstance(p, str) or not p.strip()]
        if not paths or bad:
            raise ConfigurationError(f"{what} needs one or more paths or URLs, got {paths!r:.120}")
        return list(paths)

    def add_jars(self, *jars_path: str) -> Self:
        """Jars for the session this environment starts (``spark.jars``).

        Args:
            *jars_path: jar paths or URLs (``file:///...``, ``s3a://...``).

        Returns:
            This environment.

        Raises:
            ConfigurationError: no path given, or a Spark session is already running (it
                takes ``spark.jars`` only when it starts).
        """
        self._before_session("add_jars", "pipeline.jars", "spark.jars",
                             self._paths("add_jars", jars_path))
        return self

    def add_classpaths(self, *classpaths: str) -> Self:
        """Classpath entries for the session this environment starts (``spark.jars``,
        which puts them on the driver's and executors' classpath).

        Args:
            *classpaths: jar paths or URLs.

        Returns:
            This environment.

        Raises:
            ConfigurationError: as :meth:`add_jars`.
        """
        self._before_session("add_classpaths", "pipeline.classpaths", "spark.jars",
                             self._paths("add_classpaths", classpaths))
        return self

    def set_python_executable(self, python_exec: str) -> Self:
        """The Python interpreter of the Python workers of the session this environment
        starts (``PYSPARK_PYTHON`` / ``spark.pyspark.python``).

        Args:
            python_exec: path of a Python interpreter with this package installed.

        Returns:
            This environment.

        Raises:
            ConfigurationError: not a path, or a session is already running (its workers'
                Python is fixed when it starts; under Spark Connect, by the server).
        """
        path = self._paths("set_python_executable", (python_exec,))[0]
        self._before_session("set_python_executable", "python.executable",
                             "spark.pyspark.python (PYSPARK_PYTHON)", [])
        self._config.set_string("python.executable", path)
        return self

    def add_python_file(self, file_path: str) -> Self:
        """Ship a ``.py``/``.zip``/``.egg`` file to the Python workers
        (``SparkContext.addPyFile``; under Spark Connect ``addArtifacts(pyfile=True)``).

        Args:
            file_path: local path or URL of the file.

        Returns:
            This environment.

        Raises:
            ConfigurationError: not a path, or a local path that does not exist.
        """
        self._queue_ship("add_python_file", file_path, "pyfile")
        return self

    def add_python_archive(self, archive_path: str, target_dir: Optional[str] = None
                           ) -> Self:
        """Ship an archive, extracted in the workers' directory as ``target_dir``
        (``SparkContext.addArchive``; under Spark Connect ``addArtifacts(archive=True)``).

        Args:
            archive_path: local path or URL of a zip, tar or tar.gz archive.
            target_dir: name of the extracted directory (default: the archive's name).

        Returns:
            This environment.

        Raises:
            ConfigurationError: not a path, or a local path that does not exist.
        """
        self._queue_ship("add_python_archive", archive_path, "archive",
                         f"#{target_dir}" if target_dir else "")
        return self

    def set_python_requirements(self, requirements_file_path: str,
                                requirements_cache_dir: Optional[str] = None
                                ) -> Self:
        """Refused: Spark installs no requirements on its workers.

        Args:
            requirements_file_path: the requirements file.
            requirements_cache_dir: the offline package directory.

        Returns:
            Nothing: it always raises.

        Raises:
            ConfigurationError: always, naming what to do instead.
        """
        raise ConfigurationError(
            f"set_python_requirements({requirements_file_path!r}): Spark installs no Python "
            f"requirements on its workers; install them into the workers' Python, or ship a "
            f"packed environment (venv-pack, conda-pack) with add_python_archive(path, 'env') "
            f"and point set_python_executable at 'env/bin/python' before the session starts")

    def _queue_ship(self, what: str, path: Any, kind: str, suffix: str = "") -> None:
        path = self._paths(what, (path,))[0]
        if "://" not in path and not os.path.exists(path):
            raise ConfigurationError(f"{what}: {path!r} does not exist")
        self._py_files.append((path + suffix, kind))
        if self._running_session() is not None:
            pending, self._py_files = self._py_files, []
            for p, k in pending:
                self._ship(p, k)

    def _ship(self, path: str, kind: str) -> None:
        from ..translation.query_ids import is_connect

        spark = self._running_session() or self.spark
        if is_connect(spark):
            spark.addArtifacts(path, pyfile=kind == "pyfile", archive=kind == "archive")
        elif kind == "pyfile":
            spark.sparkContext.addPyFile(path)
        else:
            spark.sparkContext.addArchive(path)
