"""STREAMING translation: :class:`~.translator.StreamingTranslator` turns a job graph into
Structured Streaming queries, one per keyed stage (``per-stage``) or one per job
(``one_query.py``).

Modules here import the shared part (``translation/``, one level up) and never a BATCH
module (``translation/batch/``); the structure test holds that.
"""
