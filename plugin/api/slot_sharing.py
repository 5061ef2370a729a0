"""PyFlink's ``MemorySize`` and ``SlotSharingGroup`` (``pyflink.datastream.slot_sharing_group``).

A slot-sharing group names which operators Flink may place in one task slot and the
resources the slot asks for. Spark schedules its tasks on its executors by itself: a group is
checked and kept (its getters answer), and ``slot_sharing_group(...)`` on a stream or
``env.register_slot_sharing_group`` has no other effect. ``MemorySize`` is a plain byte count.
"""

from __future__ import annotations

from typing import Any, Optional

from ..state_store.exceptions import GraphBuildError
from .no_jvm import no_java_object

__all__ = ["MemorySize", "SlotSharingGroup"]


class MemorySize:
    """A number of bytes (Flink's ``MemorySize``).

    Args:
        j_memory_size: PyFlink's Java object; must be None here.
        bytes_size: The size in bytes (an int >= 0).

    Raises:
        GraphBuildError: a Java object is given, or ``bytes_size`` is not an int >= 0.
    """

    def __init__(self, j_memory_size: Any = None, bytes_size: Optional[int] = None) -> None:
        if j_memory_size is not None:
            raise GraphBuildError("MemorySize(j_memory_size): there is no Java Flink object here;"
                                  " use MemorySize(bytes_size=...) or MemorySize.of_mebi_bytes")
        if isinstance(bytes_size, bool) or not isinstance(bytes_size, int) or bytes_size < 0:
            raise GraphBuildError(f"MemorySize needs bytes_size, an int >= 0, got {bytes_size!r}")
        self._bytes = bytes_size

    @staticmethod
    def of_mebi_bytes(mebi_bytes: int) -> MemorySize:
        """A size of ``mebi_bytes`` MiB.

        Args:
            mebi_bytes: an int >= 0.

        Returns:
            The MemorySize.
        """
        if isinstance(mebi_bytes, bool) or not isinstance(mebi_bytes, int) or mebi_bytes < 0:
            raise GraphBuildError(f"MemorySize.of_mebi_bytes needs an int >= 0, got {mebi_bytes!r}")
        return MemorySize(bytes_size=mebi_bytes << 20)

    def get_bytes(self) -> int:
        """The size in bytes.

        Returns:
            Bytes.
        """
        return self._bytes

    def get_kibi_bytes(self) -> int:
        """The size in whole KiB (rounded down, as Flink).

        Returns:
            KiB.
        """
        return self._bytes >> 10

    def get_mebi_bytes(self) -> int:
        """The size in whole MiB (rounded down).

        Returns:
            MiB.
        """
        return self._bytes >> 20

    def get_gibi_bytes(self) -> int:
        """The size in whole GiB (rounded down).

        Returns:
            GiB.
        """
        return self._bytes >> 30

    def get_tebi_bytes(self) -> int:
        """The size in whole TiB (rounded down).

        Returns:
            TiB.
        """
        return self._bytes >> 40

    get_java_memory_size = no_java_object("MemorySize.get_java_memory_size")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MemorySize) and other._bytes == self._bytes

    def __hash__(self) -> int:
        return hash(self._bytes)

    def __lt__(self, other: MemorySize) -> bool:
        return self._bytes < other._bytes

    def __repr__(self) -> str:
        return f"MemorySize({self._bytes} bytes)"


def _memory(what: str, value: Any) -> MemorySize:
    if not isinstance(value, MemorySize):
        raise GraphBuildError(f"SlotSharingGroup.Builder.{what} needs a MemorySize, got {value!r}")
    return value


def _mb(what: str, value: Any) -> MemorySize:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise GraphBuildError(f"SlotSharingGroup.Builder.{what} needs an int >= 0, got {value!r}")
    return MemorySize.of_mebi_bytes(value)


class SlotSharingGroup:
    """A named slot-sharing group with its resources; built with
    ``SlotSharingGroup.builder(name)...build()``. Kept and checked, no effect on Spark's
    scheduling (see the module docstring).

    Args:
        name: The group's name.
        cpu_cores: The CPU cores it asks for, or None.
        task_heap_memory: Its task heap memory, or None.
        task_off_heap_memory: Its task off-heap memory, or None.
        managed_memory: Its managed memory, or None.
        external_resources: External resources by name, or None.
    """

    def __init__(self, name: str, cpu_cores: Optional[float] = None,
                 task_heap_memory: Optional[MemorySize] = None,
                 task_off_heap_memory: Optional[MemorySize] = None,
                 managed_memory: Optional[MemorySize] = None,
                 external_resources: Optional[dict[str, float]] = None) -> None:
        if not isinstance(name, str) or not name:
            raise GraphBuildError(f"SlotSharingGroup needs a non-empty name, got {name!r}")
        self._name = name
        self._cpu_cores = cpu_cores
        self._task_heap = task_heap_memory
        self._task_off_heap = task_off_heap_memory
        self._managed = managed_memory
        self._external = dict(external_resources or {})

    @staticmethod
    def builder(name: str) -> SlotSharingGroup.Builder:
        """A builder of the group ``name``.

        Args:
            name: A non-empty name.

        Returns:
            The builder.
        """
        return SlotSharingGroup.Builder(name)

    def get_name(self) -> str:
        """The group's name.

        Returns:
            The name.
        """
        return self._name

    def get_cpu_cores(self) -> Optional[float]:
        """The CPU cores the group asks for.

        Returns:
            The cores, or None when unset.
        """
        return self._cpu_cores

    def get_task_heap_memory(self) -> Optional[MemorySize]:
        """The task heap memory the group asks for.

        Returns:
            The size, or None when unset.
        """
        return self._task_heap

    def get_task_off_heap_memory(self) -> Optional[MemorySize]:
        """The task off-heap memory the group asks for.

        Returns:
            The size, or None when unset.
        """
        return self._task_off_heap

    def get_managed_memory(self) -> Optional[MemorySize]:
        """The managed memory the group asks for.

        Returns:
            The size, or None when unset.
        """
        return self._managed

    def get_external_resources(self) -> dict[str, float]:
        """The external resources (e.g. ``gpu``) the group asks for.

        Returns:
            Name -> amount.
        """
        return dict(self._external)

    get_java_slot_sharing_group = no_java_object("SlotSharingGroup.get_java_slot_sharing_group")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SlotSharingGroup) and vars(other) == vars(self)

    def __hash__(self) -> int:
        return hash(self._name)

    def __repr__(self) -> str:
        return f"SlotSharingGroup({self._name!r})"

    class Builder:
        """Builds a :class:`SlotSharingGroup` (PyFlink's ``SlotSharingGroup.Builder``)."""

        def __init__(self, name: str) -> None:
            SlotSharingGroup(name)  # checks the name
            self._name = name
            self._cpu: Optional[float] = None
            self._heap: Optional[MemorySize] = None
            self._off_heap: Optional[MemorySize] = None
            self._managed: Optional[MemorySize] = None
            self._external: dict[str, float] = {}

        def set_cpu_cores(self, cpu_cores: float) -> SlotSharingGroup.Builder:
            """The CPU cores (> 0).

            Args:
                cpu_cores: a number > 0.

            Returns:
                This builder.
            """
            if isinstance(cpu_cores, bool) or not isinstance(cpu_cores, (int, float)) \
                    or cpu_cores <= 0:
                raise GraphBuildError(
                    f"SlotSharingGroup.Builder.set_cpu_cores needs a number > 0, got {cpu_cores!r}")
            self._cpu = float(cpu_cores)
            return self

        def set_task_heap_memory(self, task_heap_memory: MemorySize) -> SlotSharingGroup.Builder:
            """The task heap memory.

            Args:
                task_heap_memory: a MemorySize.

            Returns:
                This builder.
            """
            self._heap = _memory("set_task_heap_memory", task_heap_memory)
            return self

        def set_task_heap_memory_mb(self, task_heap_mb: int) -> SlotSharingGroup.Builder:
            """The task heap memory in MiB.

            Args:
                task_heap_mb: an int >= 0.

            Returns:
                This builder.
            """
            self._heap = _mb("set_task_heap_memory_mb", task_heap_mb)
            return self

        def set_task_off_heap_memory(self, task_off_heap_memory: MemorySize
                                     ) -> SlotSharingGroup.Builder:
            """The task off-heap memory.

            Args:
                task_off_heap_memory: a MemorySize.

            Returns:
                This builder.
            """
            self._off_heap = _memory("set_task_off_heap_memory", task_off_heap_memory)
            return self

        def set_task_off_heap_memory_mb(self, task_off_heap_mb: int) -> SlotSharingGroup.Builder:
            """The task off-heap memory in MiB.

            Args:
                task_off_heap_mb: an int >= 0.

            Returns:
                This builder.
            """
            self._off_heap = _mb("set_task_off_heap_memory_mb", task_off_heap_mb)
            return self

        def set_managed_memory(self, managed_memory: MemorySize) -> SlotSharingGroup.Builder:
            """The managed memory.

            Args:
                managed_memory: a MemorySize.

            Returns:
                This builder.
            """
            self._managed = _memory("set_managed_memory", managed_memory)
            return self

        def set_managed_memory_mb(self, managed_memory_mb: int) -> SlotSharingGroup.Builder:
            """The managed memory in MiB.

            Args:
                managed_memory_mb: an int >= 0.

            Returns:
                This builder.
            """
            self._managed = _mb("set_managed_memory_mb", managed_memory_mb)
            return self

        def set_external_resource(self, name: str, value: float) -> SlotSharingGroup.Builder:
            """An external resource (e.g. ``gpu``) and its amount.

            Args:
                name: the resource's name.
                value: its amount (> 0).

            Returns:
                This builder.
            """
            if not isinstance(name, str) or not name or isinstance(value, bool) or \
                    not isinstance(value, (int, float)) or value <= 0:
                raise GraphBuildError(
                    f"SlotSharingGroup.Builder.set_external_resource needs a name and an amount "
                    f"> 0, got {name!r}, {value!r}")
            self._external[name] = float(value)
            return self

        def build(self) -> SlotSharingGroup:
            """The group.

            Returns:
                A SlotSharingGroup.
            """
            return SlotSharingGroup(self._name, self._cpu, self._heap, self._off_heap,
                                    self._managed, self._external)
