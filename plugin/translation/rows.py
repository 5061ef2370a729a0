"""Where the translation places the Row stages of ``runtime/rows.py`` (#16).

A translated :class:`~.stream.Stream` runs its pending work (a keyed or two-input operator,
then a chain of stages) in one pass. Every function reading records of a ``Types.ROW`` /
``ROW_NAMED`` stream must see named Rows, so:

* before a stage is added to pending work whose records are of a ROW type, a Row stage
  reshapes them (:func:`chain_before`);
* a pass whose records are pickled or keyed (a key selector, a pre-aggregating reduce
  reads them) ends with a Row stage (:func:`chain_for_output`): pickled records of a ROW
  stream are Rows, so whatever decodes them later needs no type. A pass writing typed
  columns needs none: typed ROW columns decode into Rows;
* a stream whose records come pickled from elsewhere (side outputs, full-partition
  functions) starts with a Row stage (:func:`leading_rows`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from ..operators.windows.spec import WindowSpec
from ..plan.graph import KeyedNode
from ..runtime.encoding import Encoding
from ..runtime.rows import is_row_stage, row_stage, shaped_reduce
from .stream import Stream

if TYPE_CHECKING:
    from ..runtime.passes import KeyOut
    from ..state_store.typeinfo import TypeInformation

__all__ = ["chain_before", "chain_for_output", "leading_rows", "keyed_function"]


def chain_before(stream: Stream) -> tuple[tuple[Any, ...], ...]:
    """``stream``'s chain, ending with a Row stage when its pending work makes records of a
    ROW type (the next stage reads Rows); records decoded from its DataFrame are Rows."""
    chain = stream.chain
    if not stream.pending or _rows_already(chain):
        return chain
    stage = row_stage(stream.type_info, stream.name)
    return chain if stage is None else chain + (stage,)


def _rows_already(chain: tuple[tuple[Any, ...], ...]) -> bool:
    """Whether the chain's records are Rows already: a Row stage, then only stages that
    pass records on unchanged (filters, timestamp assigners)."""
    for stage in reversed(chain):
        if is_row_stage(stage):
            return True
        if stage[0] not in ("filter", "timestamps"):
            return False
    return False


def chain_for_output(stream: Stream, enc: Encoding, key_out: Optional[KeyOut] = None
                    ) -> list[tuple[Any, ...]]:
    """The chain of a pass running ``stream``'s pending work into ``enc`` (with ``key_out``,
    keyed for the next operator): records of a ROW type leave pickled or keyed as Rows; a
    trailing Row stage is dropped before typed columns, which do not need it."""
    if enc.typed and key_out is None:
        chain = stream.chain
        return list(chain[:-1] if chain and is_row_stage(chain[-1]) else chain)
    return list(chain_before(stream))


def leading_rows(type_info: Optional[TypeInformation], name: str) -> tuple[tuple[Any, ...], ...]:
    """The chain of a stream whose pickled records of ``type_info`` may not be Rows yet: a
    Row stage for a ROW type, else nothing."""
    stage = row_stage(type_info, name)
    return () if stage is None else (stage,)


def keyed_function(node: KeyedNode) -> Any:
    """The function a keyed node runs: a reduce over records of a ROW type, keyed or per
    window, reads Rows for the value it returned last too
    (:func:`~..runtime.rows.shaped_reduce`)."""
    op = getattr(node, "op", None)
    if op == "reduce":
        return shaped_reduce(node.function, node.output_type, node.name)
    spec = node.function
    if op != "window" or not isinstance(spec, WindowSpec) or spec.kind != "reduce":
        return spec
    shaped = shaped_reduce(spec.function, node.inputs[0].output_type, node.name)
    if shaped is spec.function:
        return spec
    return WindowSpec(spec.assigner, spec.kind, shaped, trigger=spec.trigger,
                      allowed_lateness=spec.allowed_lateness,
                      late_output_tag=spec.late_output_tag,
                      window_function=spec.window_function, state_type=spec.state_type)
