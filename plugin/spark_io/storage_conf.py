"""The storage layer's options from the Spark session, so one configuration serves Spark's
Hadoop filesystems and the Python side (``state_store/storage``).

Each S3 setting comes from the job's explicit override (the ``s3.*`` keys of
``plan/config.py``), else the session's Hadoop configuration (``fs.s3a.*``: the live one
where the session has a JVM, and ``spark.hadoop.fs.s3a.*`` of ``spark.conf``, which Spark
Connect also answers), else the environment's defaults (AWS's credential chain).

Code that reads or writes a path on the driver asks :func:`current_storage`: while a job is
built and runs (:func:`job_scope`, entered by the environment, a job client's thread and each
Delta sink's ``foreachBatch`` function, which Spark calls from threads of its own) it answers the job's storage, so the checkpoint root, savepoints
and Delta tables share one configuration; outside a job (the ``Savepoint`` reader, the
``SavepointWriter``), the session's. Executors get the job's :class:`Storage` pickled.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Optional

from ..plan.config import resolve
from ..state_store.exceptions import ConfigurationError
from ..state_store.storage import Storage, StorageOptions, normalize_uri

__all__ = ["S3_KEYS", "delta_options", "job_scope", "job_storage", "current_storage",
           "storage_options", "storage_root"]

#: the storage of the job being built or run in this context (None: the session's alone)
_JOB_STORAGE: ContextVar[Optional[Storage]] = ContextVar("pyspark_datastream_job_storage",
                                                         default=None)

#: option field -> (the job's override key, the Hadoop key)
S3_KEYS: dict[str, tuple[str, str]] = {
    "s3_endpoint": ("s3.endpoint", "fs.s3a.endpoint"),
    "s3_access_key": ("s3.access-key", "fs.s3a.access.key"),
    "s3_secret_key": ("s3.secret-key", "fs.s3a.secret.key"),
    "s3_session_token": ("s3.session-token", "fs.s3a.session.token"),
    "s3_path_style": ("s3.path.style.access", "fs.s3a.path.style.access"),
    "s3_ssl": ("s3.connection.ssl.enabled", "fs.s3a.connection.ssl.enabled"),
    "s3_region": ("s3.endpoint.region", "fs.s3a.endpoint.region"),
}
_BOOLEAN = ("s3_path_style", "s3_ssl")


def _hadoop_conf(spark: Any) -> Any:
    try:
        return spark._jsc.hadoopConfiguration()  # noqa: SLF001 - the live Hadoop conf
    except Exception:  # noqa: BLE001 - Spark Connect has no JVM on the client
        return None


def _session_value(spark: Any, hadoop: Any, key: str) -> Optional[str]:
    value = None
    if spark is not None:
        try:
            value = spark.conf.get("spark.hadoop." + key, None)
        except Exception:  # noqa: BLE001 - restricted sessions may refuse conf reads
            value = None
    if not value and hadoop is not None:
        try:
            value = hadoop.get(key)
        except Exception:  # noqa: BLE001
            value = None
    return str(value).strip() if value else None


def storage_options(config: Any, spark: Any) -> StorageOptions:
    """The storage options of a job: overrides, else the session's Hadoop conf.

    Args:
        config: the job's configuration.
        spark: the Spark session (classic or Connect), or None.
    Returns:
        the resolved, picklable options.
    Raises:
        ConfigurationError: a boolean setting is neither true nor false.
    """
    hadoop = _hadoop_conf(spark) if spark is not None else None
    values: dict[str, Any] = {}
    for field, (override, hadoop_key) in S3_KEYS.items():
        raw = resolve(config, override, None) if config is not None else None
        source = override
        if raw in (None, ""):
            raw, source = _session_value(spark, hadoop, hadoop_key), hadoop_key
        if raw in (None, ""):
            continue
        if field in _BOOLEAN:
            text = str(raw).strip().lower()
            if text not in ("true", "false"):
                raise ConfigurationError(f"{source} must be true or false, got {raw!r}")
            values[field] = text == "true"
        else:
            values[field] = str(raw).strip()
    return StorageOptions(**values)


def storage_root(root: str, key: str) -> str:
    """``root`` normalized for the storage layer (see ``normalize_uri``).

    Args:
        root: the configured root.
        key: where it came from, named in errors.
    Returns:
        the normalized root.
    Raises:
        ConfigurationError: the scheme is not served.
    """
    return normalize_uri(root, key)


def job_storage(config: Any, spark: Any) -> Storage:
    """The :class:`Storage` of a job (options from :func:`storage_options`).

    Args:
        config: the job's configuration.
        spark: the Spark session.
    Returns:
        the storage.
    """
    return Storage(storage_options(config, spark))


@contextmanager
def job_scope(storage: Storage) -> Iterator[None]:
    """Within the block (in this thread, and threads started with a copy of its context),
    :func:`current_storage` answers ``storage``.

    Args:
        storage: the job's storage (:func:`job_storage`).
    Returns:
        the scope (a context manager).
    """
    token = _JOB_STORAGE.set(storage)
    try:
        yield
    finally:
        _JOB_STORAGE.reset(token)


def current_storage(spark: Any = None) -> Storage:
    """The :class:`Storage` for any path on the driver: the job's in :func:`job_scope`,
    else one of the session's Hadoop conf alone.

    Args:
        spark: the session; the active one when None.
    Returns:
        the storage.
    """
    job = _JOB_STORAGE.get()
    if job is not None:
        return job
    if spark is None:
        from pyspark.sql import SparkSession

        spark = SparkSession.getActiveSession()
    return Storage(storage_options(None, spark))


def delta_options(uri: str, storage: Storage) -> Optional[dict[str, str]]:
    """delta-rs ``storage_options`` for the table at ``uri`` (None: a local table).

    Args:
        uri: the table's normalized path or URI.
        storage: the storage layer whose options apply.
    Returns:
        the options, or None.
    """
    if storage.is_local(uri):
        return None
    o = storage.options
    out: dict[str, str] = {}
    if uri.split(":", 1)[0].lower() in ("s3a", "s3", "s3n"):
        # S3 has no atomic rename: commits use conditional writes (If-None-Match)
        out["conditional_put"] = "etag"
        if o.s3_endpoint:
            endpoint = o.s3_endpoint
            if "://" not in endpoint:
                endpoint = ("http://" if o.s3_ssl is False else "https://") + endpoint
            out["AWS_ENDPOINT_URL"] = endpoint
            if endpoint.startswith("http://"):
                out["AWS_ALLOW_HTTP"] = "true"
        if o.s3_access_key:
            out["AWS_ACCESS_KEY_ID"] = o.s3_access_key
        if o.s3_secret_key:
            out["AWS_SECRET_ACCESS_KEY"] = o.s3_secret_key
        if o.s3_session_token:
            out["AWS_SESSION_TOKEN"] = o.s3_session_token
        if o.s3_region or o.s3_endpoint:
            out["AWS_REGION"] = o.s3_region or "us-east-1"
        if o.s3_path_style is not None:
            out["AWS_VIRTUAL_HOSTED_STYLE_REQUEST"] = "false" if o.s3_path_style else "true"
    return out
