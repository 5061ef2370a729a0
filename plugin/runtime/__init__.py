"""Everything shipped to executors: the per-partition passes, the Arrow record encodings,
the fast paths and group frames. No ``pyspark.sql`` here (``TaskContext`` aside)."""
