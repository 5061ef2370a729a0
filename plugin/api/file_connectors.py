"""PyFlink's file connectors on Spark. The source: ``FileSource.for_record_stream_format(
StreamFormat.text_line_format(), *paths)`` reads text files line by line with Spark's text
source (``CsvReaderFormat.for_schema(...)``: CSV rows with Spark's CSV source;
``for_bulk_file_format(ParquetColumnarRowInputFormat(...), ...)``: Parquet, ``file_formats.py``),
bounded (every file there when the job starts) or, with ``monitor_continuously``,
unbounded (Spark's streaming file source: each new file read once). Directories are read
recursively and hidden files (``.x``, ``_x``) skipped, as Flink's default enumerator does.
The sink: ``FileSink.for_row_format(base_path, Encoder.simple_string_encoder())`` writes each
record as a line of part files named as Flink names them, in Flink's bucket folders
(``runtime/part_files.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NoReturn, Optional

from ..state_store.exceptions import GraphBuildError
from ..state_store.typeinfo import TypeInformation
from ..state_store.types import Types
from .connector_checks import nonempty_text, require_utf8, unsupported_option
from .exceptions import UnsupportedConnectorError
from .file_formats import CsvReaderFormat, ParquetColumnarRowInputFormat, StreamFormat
from .no_jvm import no_java_object
from .time import Duration

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["StreamFormat", "FileSource", "FileSourceBuilder", "strftime_pattern", "Encoder",
           "OutputFileConfig", "OutputFileConfigBuilder", "RollingPolicy", "BucketAssigner",
           "FileSink", "FileSinkRowFormatBuilder"]

_SPARK_READS = ("read other formats (JSON lines, ORC, Avro) with spark.read (or "
                "spark.readStream) and pass the DataFrame to env.from_dataframe")


class FileSource:
    """A file source; ``env.from_source`` reads it. Built by
    ``FileSource.for_record_stream_format(...).build()``; not constructed directly.
    """

    def __init__(self, paths: tuple[str, ...], monitor_ms: Optional[int],
                 file_format: Any = None) -> None:
        self.paths = paths
        self.monitor_ms = monitor_ms
        #: None: text lines; else a CsvReaderFormat or ParquetColumnarRowInputFormat
        self.file_format = file_format

    @staticmethod
    def for_record_stream_format(stream_format: StreamFormat | CsvReaderFormat,
                                 *paths: str) -> FileSourceBuilder:
        """A builder of a source reading the files at ``paths`` (files or directories, local
        paths or URIs such as ``file:///...`` and ``s3a://...``) with ``stream_format``.

        Args:
            stream_format: ``StreamFormat.text_line_format()`` (str records) or
                ``CsvReaderFormat.for_schema(schema)`` (named Rows).
            *paths: One or more paths.

        Returns:
            The builder.

        Raises:
            GraphBuildError: For no path or a path that is not a non-empty str, or another format.
        """
        if not isinstance(stream_format, (StreamFormat, CsvReaderFormat)):
            raise GraphBuildError("FileSource.for_record_stream_format needs a StreamFormat "
                                  "(StreamFormat.text_line_format()) or a CsvReaderFormat, "
                                  f"got {stream_format!r}")
        fmt = stream_format if isinstance(stream_format, CsvReaderFormat) else None
        return FileSourceBuilder(_paths("for_record_stream_format", paths), fmt)

    @staticmethod
    def for_bulk_file_format(bulk_format: ParquetColumnarRowInputFormat,
                             *paths: str) -> FileSourceBuilder:
        """A builder of a source reading Parquet files at ``paths`` as named Rows.

        Args:
            bulk_format: A ``ParquetColumnarRowInputFormat``.
            *paths: One or more paths (files or directories, local paths or URIs).

        Returns:
            The builder.

        Raises:
            UnsupportedConnectorError: Another bulk format, naming the Spark reader to use.
            GraphBuildError: For no path or a path that is not a non-empty str.
        """
        if not isinstance(bulk_format, ParquetColumnarRowInputFormat):
            raise unsupported_option("FileSource", f"for_bulk_file_format({bulk_format!r}, ...)",
                                     "use ParquetColumnarRowInputFormat, or " + _SPARK_READS)
        return FileSourceBuilder(_paths("for_bulk_file_format", paths), bulk_format)

    @property
    def type_info(self) -> TypeInformation:
        """The records' type: ``Types.STRING()`` for text lines, else the format's row."""
        fmt = self.file_format
        return Types.STRING() if fmt is None else fmt.row_type

    @property
    def bounded(self) -> bool:
        """Whether the source ends (no ``monitor_continuously``)."""
        return self.monitor_ms is None

    def dataframe(self, spark: SparkSession) -> DataFrame:
        """The source's records as a DataFrame (one string column of lines, or the format's
        columns): a batch read when bounded, a streaming read (each new file once) when
        monitored.

        Args:
            spark: The session.

        Returns:
            The DataFrame.

        Raises:
            GraphBuildError: Spark cannot read a path of a bounded source (it does not exist).
        """
        from pyspark.errors import AnalysisException

        fmt = self.file_format

        def read(reader: Any, paths: list[str]) -> DataFrame:
            reader = reader.option("recursiveFileLookup", "true")
            return reader.text(paths if len(paths) > 1 else paths[0]) if fmt is None \
                else fmt.read(reader, paths)

        if self.bounded:
            try:
                return read(spark.read, list(self.paths))
            except AnalysisException as exc:
                raise GraphBuildError(f"{self!r}: Spark cannot read it: {exc}") from exc
        frames = [read(spark.readStream, [p]) for p in self.paths]  # one path per stream read
        df = frames[0]
        for other in frames[1:]:
            df = df.unionByName(other)
        return df

    get_java_function = no_java_object("FileSource.get_java_function", UnsupportedConnectorError)

    def __repr__(self) -> str:
        monitor = "" if self.bounded else f", monitor_continuously={self.monitor_ms} ms"
        fmt = "" if self.file_format is None else f", {self.file_format!r}"
        return f"FileSource({', '.join(map(repr, self.paths))}{fmt}{monitor})"


def _paths(call: str, paths: tuple[str, ...]) -> tuple[str, ...]:
    if not paths:
        raise GraphBuildError(f"FileSource.{call} needs one or more paths")
    return tuple(nonempty_text("FileSource", "path", p) for p in paths)


class FileSourceBuilder:
    """PyFlink's ``FileSourceBuilder``: bounded unless ``monitor_continuously`` is called.
    Returned by ``FileSource.for_record_stream_format``; not constructed directly."""

    _WHAT = "FileSource"

    def __init__(self, paths: tuple[str, ...], file_format: Any = None) -> None:
        self._paths = paths
        self._format = file_format
        self._monitor_ms: Optional[int] = None

    def monitor_continuously(self, discovery_interval: Duration) -> FileSourceBuilder:
        """Make the source unbounded: files that appear under the paths later are read too,
        each once (Spark's streaming file source looks for them at every micro-batch, so the
        interval is the STREAMING trigger's, not ``discovery_interval``). A file must appear
        complete (written elsewhere and moved in), as in Flink.

        Args:
            discovery_interval: Flink's discovery interval (a positive Duration).

        Returns:
            This builder.

        Raises:
            GraphBuildError: For something other than a positive Duration.
        """
        if not isinstance(discovery_interval, Duration) or discovery_interval.millis <= 0:
            raise GraphBuildError("FileSource: monitor_continuously needs a positive Duration, "
                                  f"got {discovery_interval!r}")
        self._monitor_ms = discovery_interval.millis
        return self

    def process_static_file_set(self) -> FileSourceBuilder:
        """Make the source bounded (the default): the files there when the job starts.

        Returns:
            This builder.
        """
        self._monitor_ms = None
        return self

    def set_file_enumerator(self, file_enumerator: Any) -> NoReturn:
        """Not supported: Spark lists the files.

        Args:
            file_enumerator: PyFlink's enumerator (not used).

        Raises:
            UnsupportedConnectorError: Always.
        """
        raise unsupported_option(self._WHAT, "set_file_enumerator(...)", "Spark lists the files")

    def set_split_assigner(self, split_assigner: Any) -> NoReturn:
        """Not supported: Spark splits and assigns the files.

        Args:
            split_assigner: PyFlink's assigner (not used).

        Raises:
            UnsupportedConnectorError: Always.
        """
        raise unsupported_option(self._WHAT, "set_split_assigner(...)",
                                 "Spark splits and assigns the files")

    def build(self) -> FileSource:
        """The FileSource.

        Returns:
            The source.
        """
        return FileSource(self._paths, self._monitor_ms, self._format)


# -- FileSink -------------------------------------------------------------------------------

#: Java DateTimeFormatter letters the date-time bucket assigner maps (to strftime)
_JAVA_DATE_TOKENS = {"yyyy": "%Y", "yy": "%y", "MM": "%m", "dd": "%d", "HH": "%H", "mm": "%M",
                     "ss": "%S"}


def strftime_pattern(java_pattern: str) -> str:
    """The ``strftime`` form of a Java ``DateTimeFormatter`` pattern made of ``yyyy``, ``yy``,
    ``MM``, ``dd``, ``HH``, ``mm``, ``ss``, quoted text and characters other than letters.

    Args:
        java_pattern: The pattern (Flink's default bucket format is ``yyyy-MM-dd--HH``).

    Returns:
        The strftime pattern.

    Raises:
        UnsupportedConnectorError: For another pattern letter.
    """
    out, i = [], 0
    while i < len(java_pattern):
        c = java_pattern[i]
        if c == "'":  # quoted literal text ('' is a quote)
            end = java_pattern.find("'", i + 1)
            if end < 0:
                raise unsupported_option("BucketAssigner", f"format {java_pattern!r}",
                                         "close quoted text with '")
            out.append(java_pattern[i + 1:end].replace("%", "%%") or "'")
            i = end + 1
            continue
        if c.isalpha():
            token = next((t for t in _JAVA_DATE_TOKENS if java_pattern.startswith(t, i)), None)
            if token is None:
                raise unsupported_option(
                    "BucketAssigner", f"format {java_pattern!r} (letter {c!r})",
                    f"the pattern letters are {', '.join(_JAVA_DATE_TOKENS)}")
            out.append(_JAVA_DATE_TOKENS[token])
            i += len(token)
            continue
        out.append("%%" if c == "%" else c)
        i += 1
    return "".join(out)


class Encoder:
    """How a FileSink writes a record in a row format (PyFlink's ``Encoder``). Built by
    ``Encoder.simple_string_encoder()``; not constructed directly."""

    def __init__(self, kind: str) -> None:
        self.kind = kind

    @staticmethod
    def simple_string_encoder(charset_name: str = "UTF-8") -> Encoder:
        """Each ``str`` record as a line: its text and ``\\n`` (Flink's SimpleStringEncoder).

        Args:
            charset_name: Only ``UTF-8``.

        Returns:
            The encoder.

        Raises:
            UnsupportedConnectorError: For another character set.
        """
        require_utf8("Encoder.simple_string_encoder", charset_name, "files are written as UTF-8")
        return Encoder("simple-string")

    def __repr__(self) -> str:
        return "Encoder.simple_string_encoder()"


class OutputFileConfig:
    """The part files' name prefix and suffix (PyFlink's ``OutputFileConfig``).

    Args:
        part_prefix: The name's start (default ``part``).
        part_suffix: The name's end (default none), e.g. ``.txt``.

    Raises:
        GraphBuildError: For a value that is not a str, or one holding ``/``.
    """

    def __init__(self, part_prefix: str = "part", part_suffix: str = "") -> None:
        for name, value in (("part_prefix", part_prefix), ("part_suffix", part_suffix)):
            if not isinstance(value, str) or "/" in value:
                raise GraphBuildError(f"OutputFileConfig: {name} must be a str without '/', "
                                      f"got {value!r}")
        self._prefix, self._suffix = part_prefix, part_suffix

    def get_part_prefix(self) -> str:
        """The prefix.

        Returns:
            The part files' name prefix.
        """
        return self._prefix

    def get_part_suffix(self) -> str:
        """The suffix.

        Returns:
            The part files' name suffix.
        """
        return self._suffix

    @staticmethod
    def builder() -> OutputFileConfigBuilder:
        """A builder of an OutputFileConfig.

        Returns:
            A new builder.
        """
        return OutputFileConfigBuilder()

    get_java_object = no_java_object("OutputFileConfig.get_java_object", UnsupportedConnectorError)


class OutputFileConfigBuilder:
    """PyFlink's ``OutputFileConfig.OutputFileConfigBuilder``."""

    def __init__(self) -> None:
        self._prefix, self._suffix = "part", ""

    def with_part_prefix(self, prefix: str) -> OutputFileConfigBuilder:
        """The part files' name prefix.

        Args:
            prefix: The prefix.

        Returns:
            This builder.
        """
        self._prefix = prefix
        return self

    def with_part_suffix(self, suffix: str) -> OutputFileConfigBuilder:
        """The part files' name suffix.

        Args:
            suffix: The suffix.

        Returns:
            This builder.
        """
        self._suffix = suffix
        return self

    def build(self) -> OutputFileConfig:
        """The OutputFileConfig.

        Returns:
            The config.
        """
        return OutputFileConfig(self._prefix, self._suffix)


class RollingPolicy:
    """When a FileSink starts a new part file (PyFlink's ``RollingPolicy``). Here every
    micro-batch (the whole job in BATCH) writes one file per subtask: files roll at least at
    every checkpoint, as ``on_checkpoint_rolling_policy`` says; a default policy's size and
    time bounds do not split a micro-batch's file further. Built by the factories; not
    constructed directly."""

    def __init__(self, kind: str, bounds: Optional[tuple[int, int, int]] = None) -> None:
        self.kind = kind
        self.bounds = bounds

    @staticmethod
    def default_rolling_policy(part_size: int = 1024 * 1024 * 128, rollover_interval: int = 60 * 1000,
                               inactivity_interval: int = 60 * 1000) -> RollingPolicy:
        """Flink's DefaultRollingPolicy; its bounds are kept and reported, not applied within a
        micro-batch (see the class).

        Args:
            part_size: Flink's maximum part size in bytes.
            rollover_interval: Flink's maximum time a part file stays open, in ms.
            inactivity_interval: Flink's inactivity time before a part file rolls, in ms.

        Returns:
            The policy.

        Raises:
            GraphBuildError: For a bound that is not a positive int.
        """
        for name, value in (("part_size", part_size), ("rollover_interval", rollover_interval),
                            ("inactivity_interval", inactivity_interval)):
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise GraphBuildError(f"RollingPolicy.default_rolling_policy: {name} must be a "
                                      f"positive int, got {value!r}")
        return RollingPolicy("default", (part_size, rollover_interval, inactivity_interval))

    @staticmethod
    def on_checkpoint_rolling_policy() -> RollingPolicy:
        """Roll at every checkpoint: every micro-batch here.

        Returns:
            The policy.
        """
        return RollingPolicy("on-checkpoint")

    def __repr__(self) -> str:
        if self.bounds is None:
            return "RollingPolicy.on_checkpoint_rolling_policy()"
        return ("RollingPolicy.default_rolling_policy(part_size={}, rollover_interval={}, "
                "inactivity_interval={})".format(*self.bounds))

    get_java_object = no_java_object("RollingPolicy.get_java_object", UnsupportedConnectorError)


class BucketAssigner:
    """Which folder under the base path a record goes to (PyFlink's ``BucketAssigner``).
    Built by the factories; not constructed directly."""

    def __init__(self, kind: str, pattern: str = "", timezone_id: Optional[str] = None) -> None:
        self.kind = kind
        self.pattern = pattern
        self.timezone_id = timezone_id

    @staticmethod
    def base_path_bucket_assigner() -> BucketAssigner:
        """Every file directly in the base path.

        Returns:
            The assigner.
        """
        return BucketAssigner("base-path")

    @staticmethod
    def date_time_bucket_assigner(format_str: str = "yyyy-MM-dd--HH",
                                  timezone_id: Optional[str] = None) -> BucketAssigner:
        """A folder per processing-time period, named by ``format_str`` (Flink's default
        assigner). A micro-batch's records share the folder of the batch's own processing
        time (Spark's batch timestamp, the same when the batch is run again).

        Args:
            format_str: A Java date pattern of ``yyyy``, ``yy``, ``MM``, ``dd``, ``HH``,
                ``mm``, ``ss``, quoted text and other characters.
            timezone_id: An IANA zone (``Europe/Berlin``); None: the driver's local zone.

        Returns:
            The assigner.

        Raises:
            UnsupportedConnectorError: For another pattern letter.
            GraphBuildError: For an unknown zone.
        """
        strftime_pattern(nonempty_text("BucketAssigner", "format", format_str))
        if timezone_id is not None:
            import zoneinfo

            try:
                zoneinfo.ZoneInfo(timezone_id)
            except (zoneinfo.ZoneInfoNotFoundError, ValueError) as exc:
                raise GraphBuildError(f"BucketAssigner: unknown time zone {timezone_id!r}") from exc
        return BucketAssigner("date-time", format_str, timezone_id)

    def bucket(self, time_ms: int) -> str:
        """The bucket (folder name; "" for the base path) of records written at ``time_ms``.

        Args:
            time_ms: The processing time, epoch milliseconds.

        Returns:
            The bucket id.
        """
        if self.kind == "base-path":
            return ""
        import datetime
        import zoneinfo

        zone = zoneinfo.ZoneInfo(self.timezone_id) if self.timezone_id else None
        moment = datetime.datetime.fromtimestamp(time_ms / 1000, tz=zone)
        return moment.strftime(strftime_pattern(self.pattern))

    get_java_object = no_java_object("BucketAssigner.get_java_object", UnsupportedConnectorError)

    def __repr__(self) -> str:
        if self.kind == "base-path":
            return "BucketAssigner.base_path_bucket_assigner()"
        return f"BucketAssigner.date_time_bucket_assigner({self.pattern!r}, {self.timezone_id!r})"


class FileSink:
    """A file sink; ``ds.sink_to`` writes to it. Built by
    ``FileSink.for_row_format(base_path, Encoder.simple_string_encoder()).build()``; not
    constructed directly.
    """

    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec

    @staticmethod
    def for_row_format(base_path: str, encoder: Encoder) -> FileSinkRowFormatBuilder:
        """A builder of a sink writing each record as a line of part files under ``base_path``.

        Args:
            base_path: The folder (local path or URI: ``file:///...``, ``s3a://...``).
            encoder: ``Encoder.simple_string_encoder()``.

        Returns:
            The builder.

        Raises:
            GraphBuildError: For a bad path or another encoder.
        """
        if not isinstance(encoder, Encoder):
            raise GraphBuildError("FileSink.for_row_format needs an Encoder "
                                  f"(Encoder.simple_string_encoder()), got {encoder!r}")
        return FileSinkRowFormatBuilder(nonempty_text("FileSink", "base path", base_path))

    @staticmethod
    def for_bulk_format(base_path: str, writer_factory: Any) -> NoReturn:
        """Not supported: Spark writes bulk formats itself.

        Args:
            base_path: The folder (not used).
            writer_factory: PyFlink's bulk writer factory (not used).

        Raises:
            UnsupportedConnectorError: Always, naming the Spark writer to use.
        """
        raise unsupported_option("FileSink", "for_bulk_format(...)",
                                 "write Parquet or other formats with ds.to_dataframe() and "
                                 "Spark's writer, or use sink_to_delta")

    get_java_function = no_java_object("FileSink.get_java_function", UnsupportedConnectorError)
    get_transformer = no_java_object("FileSink.get_transformer", UnsupportedConnectorError)

    def __repr__(self) -> str:
        return f"FileSink({self.spec['base_path']!r})"


class FileSinkRowFormatBuilder:
    """PyFlink's ``FileSink.RowFormatBuilder``."""

    _WHAT = "FileSink"

    def __init__(self, base_path: str) -> None:
        self._base = base_path
        self._files = OutputFileConfig()
        self._rolling = RollingPolicy.default_rolling_policy()
        self._buckets = BucketAssigner.date_time_bucket_assigner()

    def with_bucket_check_interval(self, interval: int) -> FileSinkRowFormatBuilder:
        """Flink's interval for time-based rolling checks; accepted and checked (files roll
        at every micro-batch here).

        Args:
            interval: Milliseconds (positive).

        Returns:
            This builder.
        """
        if not isinstance(interval, int) or isinstance(interval, bool) or interval <= 0:
            raise GraphBuildError(f"FileSink: with_bucket_check_interval needs a positive int "
                                  f"(ms), got {interval!r}")
        return self

    def with_bucket_assigner(self, assigner: BucketAssigner) -> FileSinkRowFormatBuilder:
        """Which folder each file goes to (default: a date-time folder per hour).

        Args:
            assigner: A BucketAssigner.

        Returns:
            This builder.
        """
        if not isinstance(assigner, BucketAssigner):
            raise GraphBuildError(f"FileSink: with_bucket_assigner needs a BucketAssigner, "
                                  f"got {assigner!r}")
        self._buckets = assigner
        return self

    def with_rolling_policy(self, policy: RollingPolicy) -> FileSinkRowFormatBuilder:
        """When part files roll (see :class:`RollingPolicy`).

        Args:
            policy: A RollingPolicy.

        Returns:
            This builder.
        """
        if not isinstance(policy, RollingPolicy):
            raise GraphBuildError(f"FileSink: with_rolling_policy needs a RollingPolicy, "
                                  f"got {policy!r}")
        self._rolling = policy
        return self

    def with_output_file_config(self, output_file_config: OutputFileConfig
                                ) -> FileSinkRowFormatBuilder:
        """The part files' name prefix and suffix.

        Args:
            output_file_config: An OutputFileConfig.

        Returns:
            This builder.
        """
        if not isinstance(output_file_config, OutputFileConfig):
            raise GraphBuildError("FileSink: with_output_file_config needs an OutputFileConfig, "
                                  f"got {output_file_config!r}")
        self._files = output_file_config
        return self

    def build(self) -> FileSink:
        """The FileSink.

        Returns:
            The sink.
        """
        return FileSink({"base_path": self._base, "prefix": self._files.get_part_prefix(),
                         "suffix": self._files.get_part_suffix(), "buckets": self._buckets,
                         "rolling": repr(self._rolling)})
