"""Driver-side Spark and Delta I/O shared by the translation and savepoint layers: Delta
reads and writes, progress observation, Spark schema mapping."""
