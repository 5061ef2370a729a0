"""The translators' base: what both do alike, and nothing more."""

from __future__ import annotations

from pyspark_datastream.translation.batch.translator import BatchTranslator
from pyspark_datastream.translation.streaming.stages import KeyedStages
from pyspark_datastream.translation.streaming.translator import StreamingTranslator
from pyspark_datastream.translation.translator_base import TranslatorBase


def test_the_translators_share_one_base_and_nothing_more() -> None:
    # each mode's own node kinds read top to bottom in its module (#14); what both do alike
    # (dispatch, the kinds both translate the same way) is their one base's (#54)
    # (the STREAMING translator's keyed stages are a part of it in their own module)
    assert BatchTranslator.__bases__ == KeyedStages.__bases__ == (TranslatorBase,)
    assert StreamingTranslator.__bases__ == (KeyedStages,)
    assert TranslatorBase.__bases__ == (object,)
    for translator in (BatchTranslator, StreamingTranslator):
        shared = TranslatorBase.SHARED_KINDS.items()
        assert shared <= translator._BY_KIND.items()  # each table starts with the shared kinds
