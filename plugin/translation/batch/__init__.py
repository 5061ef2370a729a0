"""BATCH translation: :class:`~.translator.BatchTranslator` turns a job graph into Spark
batch DataFrames sorted by key and time, run one key at a time (FLIP-140).

Modules here import the shared part (``translation/``, one level up) and never a
STREAMING module (``translation/streaming/``); the structure test holds that.
"""
