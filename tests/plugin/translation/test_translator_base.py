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


def test_each_translator_translates_every_mode_kind_with_its_own_method() -> None:
    from pyspark_datastream.translation.translator_base import MODE_KINDS

    for translator in (BatchTranslator, StreamingTranslator):
        for kind, name in MODE_KINDS.items():
            method = translator._BY_KIND[kind]
            assert method is getattr(translator, name), (translator.__name__, kind.__name__)
            assert method is not getattr(TranslatorBase, name, None)
        # a kind neither table lists is refused by _translate (tested in test_steps)
        assert set(translator._BY_KIND) == set(TranslatorBase.SHARED_KINDS) | set(MODE_KINDS)
