"""Runtime operators over record batches. No Spark imports."""
