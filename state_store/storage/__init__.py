"""Durable storage of everything the project writes outside Spark's own state store.

A root is a URI (``s3a://``, ``s3://``, ``gs://``, ``hdfs://``, ``file:``, ``file://`` or a
plain path; ``/Volumes/...`` and ``/dbfs/...`` are local FUSE paths). :class:`Storage` does
its I/O through ``pyarrow.fs`` on the driver and on executors, never ``os``/``open`` on a path
string; it imports no Spark (``spark_io/storage_conf.py`` reads the session's Hadoop conf into
:class:`StorageOptions`) and pickles without its filesystem handles, so it ships to executors.

Writes are object-store safe: a file becomes visible complete or not at all (a local file is
written then renamed, an object is written once), and readers open files by exact name.
"""

from __future__ import annotations

import io
import os
import posixpath
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, fields
from typing import IO, Any, Optional

from ..exceptions import ConfigurationError, DataStreamError, StateBackendError, StorageError

__all__ = [
    "LOCAL_SCHEMES",
    "S3_SCHEMES",
    "SUPPORTED",
    "Storage",
    "StorageOptions",
    "failing_as",
    "normalize_uri",
    "scheme_of",
]

#: schemes served through pyarrow's S3 filesystem (Hadoop's s3a, Databricks' and EMR's s3)
S3_SCHEMES = ("s3a", "s3", "s3n")
#: schemes that name the local (or FUSE-mounted) filesystem
LOCAL_SCHEMES = ("", "file")
#: every scheme a root may have
SUPPORTED = ("file:", "file://", "a plain path", "s3a://", "s3://", "s3n://", "gs://",
             "gcs://", "hdfs://")
_AZURE = "Azure storage (abfss://, abfs://, wasbs://) is not supported yet: use a Databricks " \
    "Volume (/Volumes/...) or a mounted path"
_REFUSED_HINT = {
    "abfss": _AZURE, "abfs": _AZURE, "wasbs": _AZURE, "wasb": _AZURE,
    "dbfs": "write dbfs:/X as the FUSE path /dbfs/X (or /Volumes/... for a Volume)",
}


def scheme_of(uri: str) -> str:
    """The lower-case scheme of ``uri`` ('' for a plain path).

    Args:
        uri: a path or URI.
    Returns:
        the scheme without ``:``.
    """
    head, sep, _ = uri.partition(":")
    if not sep or "/" in head or len(head) < 2 or not head.replace("+", "").isalnum():
        return ""  # a plain path (also a Windows drive letter)
    return head.lower()


def normalize_uri(uri: str, key: str) -> str:
    """``uri`` in the form the layer keeps: an absolute plain path for a local root (``file:``
    and ``file://`` dropped, relative paths made absolute here, on the driver), else the URI
    without a trailing slash.

    Args:
        uri: the configured root.
        key: the configuration key it came from, named in errors.
    Returns:
        the normalized root.
    Raises:
        ConfigurationError: the scheme is not served (names key, scheme and what is).
    """
    raw = uri.strip()
    scheme = scheme_of(raw)
    if scheme == "file":
        rest = raw[len("file:"):]
        if rest.startswith("//"):
            host, _, path = rest[2:].partition("/")
            if host not in ("", "localhost"):
                raise ConfigurationError(
                    f"{key} = {uri!r}: a file: URI with a host ({host!r}) is not a local path; "
                    "write file:/path or file:///path")
            rest = "/" + path
        return os.path.abspath(rest)
    if scheme == "":
        return os.path.abspath(raw)
    if scheme in S3_SCHEMES or scheme in ("gs", "gcs", "hdfs"):
        if not raw[len(scheme) + 1:].startswith("//") or not raw[len(scheme) + 3:].strip("/"):
            raise ConfigurationError(
                f"{key} = {uri!r}: expected {scheme}://<bucket or host>/<path>")
        return raw.rstrip("/")
    hint = _REFUSED_HINT.get(scheme, "")
    raise ConfigurationError(
        f"{key} = {uri!r}: the scheme {scheme + ':'!r} is not supported by the storage layer "
        f"(supported: {', '.join(SUPPORTED)}){'; ' + hint if hint else ''}")


@contextmanager
def failing_as(what: str, uri: str) -> Iterator[None]:
    """A storage failure inside the block (an ``OSError`` of pyarrow's filesystems: the
    store unreachable, a refused request) raised as StorageError naming ``what`` and
    ``uri``; a missing file stays FileNotFoundError, the product's errors pass. For code
    that streams through a filesystem of :meth:`Storage.resolve` itself.

    Args:
        what: the operation, e.g. ``"writing"``.
        uri: the path or URI it works on.
    Returns:
        the block's context manager.
    """
    try:
        yield
    except (DataStreamError, FileNotFoundError, NotADirectoryError):
        raise
    except OSError as exc:
        raise StorageError(f"{what} {uri} failed: {exc}") from exc


@dataclass(frozen=True)
class StorageOptions:
    """How the Python side reaches object storage; None leaves the environment's default
    (AWS's default credential chain, its region). Picklable; secrets kept out of repr."""

    s3_endpoint: Optional[str] = None
    s3_access_key: Optional[str] = None
    s3_secret_key: Optional[str] = None
    s3_session_token: Optional[str] = None
    s3_path_style: Optional[bool] = None
    s3_ssl: Optional[bool] = None
    s3_region: Optional[str] = None

    def __repr__(self) -> str:
        shown = {f.name: getattr(self, f.name) for f in fields(self)}
        for secret in ("s3_access_key", "s3_secret_key", "s3_session_token"):
            if shown[secret] is not None:
                shown[secret] = "***"
        return "StorageOptions(" + ", ".join(f"{k}={v!r}" for k, v in shown.items()
                                             if v is not None) + ")"

    def s3_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of ``pyarrow.fs.S3FileSystem`` for these options.

        Returns:
            the arguments (beyond ``allow_delayed_open``: the environment's defaults).

        Raises:
            ConfigurationError: path-style access turned off for an endpoint with a pyarrow
                older than 16, whose S3FileSystem cannot force virtual addressing.
        """
        import pyarrow

        arrow = tuple(int(p) for p in pyarrow.__version__.split(".")[:1])
        kw: dict[str, Any] = {}
        if arrow >= (20,):  # pyarrow 20 added it; before, every file is a multipart upload
            # a whole file is written at once (open_output buffers it): with a delayed open a
            # small one is one PutObject instead of a multipart upload's three round trips
            kw["allow_delayed_open"] = True
        if self.s3_access_key or self.s3_secret_key:
            kw["access_key"] = self.s3_access_key
            kw["secret_key"] = self.s3_secret_key
            if self.s3_session_token:
                kw["session_token"] = self.s3_session_token
        if self.s3_endpoint:
            endpoint = self.s3_endpoint
            scheme = None
            if "://" in endpoint:
                scheme, endpoint = endpoint.split("://", 1)
            kw["endpoint_override"] = endpoint.rstrip("/")
            ssl = self.s3_ssl if self.s3_ssl is not None else scheme != "http"
            kw["scheme"] = "https" if ssl else "http"
            kw["region"] = self.s3_region or "us-east-1"
        elif self.s3_ssl is False:
            kw["scheme"] = "http"
        if self.s3_region:
            kw["region"] = self.s3_region
        if self.s3_path_style is False and self.s3_endpoint:
            if arrow < (16,):
                raise ConfigurationError(
                    f"s3.path.style.access = false with s3.endpoint {self.s3_endpoint!r} needs "
                    f"pyarrow 16 or newer (S3FileSystem's force_virtual_addressing); pyarrow "
                    f"{pyarrow.__version__} is installed: upgrade it, or use path-style access")
            kw["force_virtual_addressing"] = True
        return kw


class Storage:
    """File operations on URIs (see the module docstring); one instance per job."""

    def __init__(self, options: Optional[StorageOptions] = None) -> None:
        self.options = options or StorageOptions()
        self._filesystems: dict[str, Any] = {}

    def __getstate__(self) -> dict[str, Any]:
        return {"options": self.options}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.options = state["options"]
        self._filesystems = {}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Storage) and other.options == self.options

    def __hash__(self) -> int:
        return hash(self.options)

    # -- paths -----------------------------------------------------------------------------
    @staticmethod
    def is_local(uri: str) -> bool:
        """Whether ``uri`` is on the local (or FUSE-mounted) filesystem.

        Args:
            uri: a normalized path or URI.
        Returns:
            True for a plain path.
        """
        return scheme_of(uri) in LOCAL_SCHEMES

    @staticmethod
    def join(uri: str, *parts: str) -> str:
        """``uri`` with ``parts`` appended, ``/``-separated.

        Args:
            uri: a normalized path or URI.
            parts: path segments.
        Returns:
            the joined path or URI.
        """
        return posixpath.join(uri, *parts)

    def resolve(self, uri: str) -> tuple[Any, str]:
        """The pyarrow filesystem serving ``uri`` and the path within it.

        Args:
            uri: a normalized path or URI.
        Returns:
            ``(filesystem, path)``.
        """
        import pyarrow.fs as pafs

        scheme = scheme_of(uri)
        if scheme in LOCAL_SCHEMES:
            fs = self._filesystems.get("")
            if fs is None:
                fs = self._filesystems[""] = pafs.LocalFileSystem()
            return fs, os.path.abspath(uri[len("file:"):] if scheme == "file" else uri)
        rest = uri.split("://", 1)[1]
        if scheme in S3_SCHEMES:
            fs = self._filesystems.get("s3")
            if fs is None:
                fs = self._filesystems["s3"] = pafs.S3FileSystem(**self.options.s3_kwargs())
            return fs, rest
        if scheme in ("gs", "gcs"):
            fs = self._filesystems.get("gs")
            if fs is None:
                fs = self._filesystems["gs"] = pafs.GcsFileSystem()
            return fs, rest
        if scheme == "hdfs":
            host = rest.split("/", 1)[0]
            fs = self._filesystems.get("hdfs:" + host)
            if fs is None:
                fs, _ = pafs.FileSystem.from_uri(uri)
                self._filesystems["hdfs:" + host] = fs
            return fs, "/" + rest.split("/", 1)[1] if "/" in rest else "/"
        normalize_uri(uri, "path")  # raises the ConfigurationError
        raise AssertionError(uri)

    # -- reads -----------------------------------------------------------------------------
    def exists(self, uri: str) -> bool:
        """Whether a file or folder ``uri`` exists.

        Args:
            uri: a path or URI.
        Returns:
            True when it exists.
        """
        import pyarrow.fs as pafs

        fs, path = self.resolve(uri)
        with failing_as("checking", uri):
            return bool(fs.get_file_info(path).type != pafs.FileType.NotFound)

    def read_bytes(self, uri: str) -> bytes:
        """The content of the file ``uri``.

        Args:
            uri: a path or URI.
        Returns:
            its bytes.
        Raises:
            FileNotFoundError: there is no such file.
            StorageError: the store failed.
        """
        with failing_as("reading", uri), self.open_input(uri) as f:
            return bytes(f.read())

    def open_input(self, uri: str) -> Any:
        """A binary stream reading the file ``uri`` (a context manager).

        Args:
            uri: a path or URI.
        Returns:
            the stream.
        Raises:
            FileNotFoundError: there is no such file.
        """
        fs, path = self.resolve(uri)
        # buffered: many small reads of a remote object must not each become a request
        with failing_as("opening", uri):
            return fs.open_input_stream(path, compression=None, buffer_size=1 << 20)

    def list_names(self, uri: str) -> list[str]:
        """Names directly in folder ``uri`` ([] when there is none). Only for clean-up and
        progress: a listing right after a write may miss it on an object store.

        Args:
            uri: a folder path or URI.
        Returns:
            the names.
        """
        import pyarrow.fs as pafs

        fs, path = self.resolve(uri)
        try:
            with failing_as("listing", uri):
                infos = fs.get_file_info(pafs.FileSelector(path, allow_not_found=True))
        except (FileNotFoundError, NotADirectoryError):
            return []
        return [posixpath.basename(i.path.rstrip("/")) for i in infos]

    # -- writes ----------------------------------------------------------------------------
    def makedirs(self, uri: str) -> None:
        """Create folder ``uri`` (an empty marker object on an object store, which Spark's
        Hadoop filesystems read as a folder).

        Args:
            uri: a folder path or URI.
        """
        fs, path = self.resolve(uri)
        with failing_as("creating folder", uri):
            fs.create_dir(path, recursive=True)

    @contextmanager
    def open_output(self, uri: str) -> Iterator[IO[bytes]]:
        """A binary stream writing file ``uri``, visible only complete: a local file is
        written under a unique hidden name and renamed (atomic there); an object is uploaded
        once, on close, and is not created when the block raises.

        Args:
            uri: the final path or URI.
        Returns:
            the stream (a context manager).
        """
        fs, path = self.resolve(uri)
        parent = posixpath.dirname(path)
        if self.is_local(uri):
            with failing_as("creating the folder of", uri):
                fs.create_dir(parent, recursive=True)
            tmp = posixpath.join(parent, f".{posixpath.basename(path)}.{uuid.uuid4().hex}.tmp")
            try:
                with open(tmp, "wb") as f:  # noqa: PTH123 - local temporary of a rename
                    yield f
                    f.flush()
                    os.fsync(f.fileno())
                with failing_as("writing", uri):
                    os.replace(tmp, path)
            except BaseException:
                if os.path.exists(tmp):
                    os.remove(tmp)
                raise
            return
        buffer = _Buffer()
        yield buffer
        with failing_as("writing", uri), \
                fs.open_output_stream(path) as out:  # one PUT / multipart upload of the whole
            out.write(buffer.getvalue())

    def write_bytes(self, uri: str, data: bytes) -> None:
        """Write file ``uri`` whole (see :meth:`open_output`).

        Args:
            uri: the final path or URI.
            data: its content.
        """
        with self.open_output(uri) as f:
            f.write(data)

    def delete_file(self, uri: str) -> None:
        """Delete file ``uri`` if it exists.

        Args:
            uri: a path or URI.
        """
        fs, path = self.resolve(uri)
        try:
            with failing_as("deleting", uri):
                fs.delete_file(path)
        except FileNotFoundError:
            pass

    def delete_dir(self, uri: str) -> None:
        """Delete folder ``uri`` with its content, if it exists.

        Args:
            uri: a folder path or URI.
        """
        fs, path = self.resolve(uri)
        try:
            with failing_as("deleting folder", uri):
                fs.delete_dir(path)
        except FileNotFoundError:
            pass

    def delete(self, uri: str) -> None:
        """Delete ``uri``, a file or a folder with its content, if it exists.

        Args:
            uri: a path or URI.
        """
        import pyarrow.fs as pafs

        fs, path = self.resolve(uri)
        with failing_as("checking", uri):
            kind = fs.get_file_info(path).type
        if kind == pafs.FileType.Directory:
            self.delete_dir(uri)
        elif kind != pafs.FileType.NotFound:
            self.delete_file(uri)

    def checked_read(self, uri: str, what: str) -> bytes:
        """:meth:`read_bytes`, a missing or unreadable file raising StateBackendError.

        Args:
            uri: a path or URI.
            what: what the file is, for the message.
        Returns:
            its bytes.
        """
        try:
            return self.read_bytes(uri)
        except OSError as exc:
            raise StateBackendError(f"{what} {uri} is missing or unreadable: {exc}") from exc


class _Buffer(io.BytesIO):
    """An in-memory write target for one object (uploaded whole by :meth:`open_output`);
    a writer closing it (as pyarrow's Parquet writer may) leaves it readable."""

    def close(self) -> None:
        pass
