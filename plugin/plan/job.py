"""The job plan: what the API built and how it is configured, frozen for one run.

The environment builds a :class:`JobPlan` for every ``execute``/``execute_async``/
``execute_and_collect``/``to_dataframe`` and hands it, with the Spark session, to a
translator; translators never see the environment or the stream objects.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..state_store.backends import BackendChoice
from .config import Configuration, RuntimeMode
from .graph import Transformation, check_forward_parallelism

__all__ = ["JobPlan"]


@dataclass(frozen=True)
class JobPlan:
    """One job: its transformations (reachable from the nodes it runs), name, resolved
    runtime mode, parallelism and state backend, and a copy of the configuration."""

    job_name: str
    #: AUTOMATIC already resolved by the sources' boundedness
    mode: RuntimeMode
    nodes: tuple[Transformation, ...]
    parallelism: int
    max_parallelism: int
    #: ``(kind, options)``: kind is "hashmap" or "rocksdb"
    state_backend: BackendChoice
    config: Configuration = field(default_factory=Configuration)

    def __post_init__(self) -> None:
        # a copy: later set_string calls on the environment's configuration do not
        # change a job that was already planned
        object.__setattr__(self, "config", Configuration(self.config))
        # Flink refuses a forward() between operators of different parallelism when it
        # builds the job graph: here, when the job is planned (before anything runs)
        check_forward_parallelism(list(self.nodes), self.parallelism)
