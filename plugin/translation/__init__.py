"""Translation of the job graph into Spark plans (BATCH and STREAMING)."""
