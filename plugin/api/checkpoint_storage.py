"""PyFlink's checkpoint storages (``pyflink.datastream.checkpoint_storage``) onto the
checkpoint root.

A STREAMING job here keeps its checkpoint (Spark's checkpoint and the state store's files)
under ``<execution.checkpointing.dir>/<job name>``. ``CheckpointConfig.set_checkpoint_storage``
takes a storage's ``get_checkpoint_path()`` as that root:

- :class:`FileSystemCheckpointStorage` ``(checkpoint_path, ...)``: the root; its size
  thresholds tune Flink's file writes and are kept with no effect.
- :class:`JobManagerCheckpointStorage`: with a ``checkpoint_path`` the root; without one
  Flink keeps checkpoints in the JobManager's memory, which Spark has no counterpart for
  (``set_checkpoint_storage`` raises ``ConfigurationError``).
- :class:`CustomCheckpointStorage` wraps a Java storage: refused when constructed.
"""

from __future__ import annotations

from typing import Any, Optional

from ..state_store.exceptions import ConfigurationError

__all__ = ["CheckpointStorage", "CustomCheckpointStorage", "FileSystemCheckpointStorage",
           "JobManagerCheckpointStorage"]


def _path(what: str, value: Any) -> Optional[str]:
    if value is not None and (not isinstance(value, str) or not value.strip()):
        raise ConfigurationError(f"{what}: checkpoint_path must be a non-empty path, got "
                                 f"{value!r:.80}")
    return value


def _size(what: str, value: Any, default: int, low: int) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ConfigurationError(f"{what} must be an int >= {low} of bytes, got {value!r}")
    return value


def _no_java(what: str, j_object: Any) -> None:
    if j_object is not None:
        raise ConfigurationError(
            f"{what}: a Java checkpoint storage cannot run here (no Flink JVM); give a "
            f"checkpoint path (FileSystemCheckpointStorage(path))")


class CheckpointStorage:
    """Base of the checkpoint storages.

    Args:
        j_checkpoint_storage: PyFlink's Java object; must be None here.

    Raises:
        ConfigurationError: a Java object is given.
    """

    def __init__(self, j_checkpoint_storage: Any = None) -> None:
        _no_java("CheckpointStorage", j_checkpoint_storage)

    def get_checkpoint_path(self) -> Optional[str]:
        """The checkpoint root this storage gives.

        Returns:
            A path, or None when it has none.
        """
        return None

    def get_savepoint_path(self) -> Optional[str]:
        """The default savepoint directory: none here (``stop_with_savepoint`` takes its
        directory).

        Returns:
            None.
        """
        return None


class JobManagerCheckpointStorage(CheckpointStorage):
    """Flink's in-memory checkpoint storage. With ``checkpoint_path`` it is that checkpoint
    root; without one it is refused by ``set_checkpoint_storage`` (checkpoints here are
    always files).

    Args:
        checkpoint_path: The checkpoint root, or None.
        max_state_size: Flink's bound on a checkpoint's state in the JobManager's memory
            (bytes, default 5 MiB); kept, not applied (state is in files here).
        j_jobmanager_checkpoint_storage: PyFlink's Java object; must be None here.

    Raises:
        ConfigurationError: a bad path or size, or a Java object.
    """

    DEFAULT_MAX_STATE_SIZE = 5 * 1024 * 1024

    def __init__(self, checkpoint_path: Optional[str] = None,
                 max_state_size: Optional[int] = None,
                 j_jobmanager_checkpoint_storage: Any = None) -> None:
        super().__init__()
        _no_java("JobManagerCheckpointStorage", j_jobmanager_checkpoint_storage)
        self._path = _path("JobManagerCheckpointStorage", checkpoint_path)
        self._max = _size("JobManagerCheckpointStorage max_state_size", max_state_size,
                          self.DEFAULT_MAX_STATE_SIZE, 1)

    def get_checkpoint_path(self) -> Optional[str]:
        """The checkpoint root given, or None.

        Returns:
            The path or None.
        """
        return self._path

    def get_max_state_size(self) -> int:
        """The ``max_state_size`` given (default 5 MiB).

        Returns:
            Bytes.
        """
        return self._max

    def __repr__(self) -> str:
        return f"JobManagerCheckpointStorage({self._path!r})"


class FileSystemCheckpointStorage(CheckpointStorage):
    """Checkpoints as files under ``checkpoint_path``: the checkpoint root here.

    Args:
        checkpoint_path: The root (local, ``file:``, ``s3a:`` or another Hadoop path).
        file_state_size_threshold: Flink's size under which state is inlined into the
            checkpoint's metadata (bytes, default 20 KiB); kept with no effect.
        write_buffer_size: Flink's write buffer (bytes, default 4096); kept with no effect.
        j_filesystem_checkpoint_storage: PyFlink's Java object; must be None here.

    Raises:
        ConfigurationError: no path, a bad size, or a Java object.
    """

    def __init__(self, checkpoint_path: Optional[str] = None,
                 file_state_size_threshold: Optional[int] = None,
                 write_buffer_size: Optional[int] = None,
                 j_filesystem_checkpoint_storage: Any = None) -> None:
        super().__init__()
        _no_java("FileSystemCheckpointStorage", j_filesystem_checkpoint_storage)
        path = _path("FileSystemCheckpointStorage", checkpoint_path)
        if path is None:
            raise ConfigurationError("FileSystemCheckpointStorage needs a checkpoint_path")
        self._path: str = path
        self._threshold = _size("FileSystemCheckpointStorage file_state_size_threshold",
                                file_state_size_threshold, 20 * 1024, 0)
        self._buffer = _size("FileSystemCheckpointStorage write_buffer_size",
                             None if write_buffer_size == -1 else write_buffer_size, 4096, 1)

    def get_checkpoint_path(self) -> str:
        """The checkpoint root.

        Returns:
            The path.
        """
        return self._path

    def get_min_file_size_threshold(self) -> int:
        """The ``file_state_size_threshold`` given (default 20 KiB).

        Returns:
            Bytes.
        """
        return self._threshold

    def get_write_buffer_size(self) -> int:
        """The ``write_buffer_size`` given (default 4096).

        Returns:
            Bytes.
        """
        return self._buffer

    def __repr__(self) -> str:
        return f"FileSystemCheckpointStorage({self._path!r})"


class CustomCheckpointStorage(CheckpointStorage):
    """A Java checkpoint storage: refused, there is no Flink JVM here.

    Args:
        j_custom_checkpoint_storage: PyFlink's Java object.

    Raises:
        ConfigurationError: always.
    """

    def __init__(self, j_custom_checkpoint_storage: Any) -> None:
        raise ConfigurationError(
            "CustomCheckpointStorage: a Java checkpoint storage cannot run here (no Flink "
            "JVM); give a checkpoint path (FileSystemCheckpointStorage(path))")
