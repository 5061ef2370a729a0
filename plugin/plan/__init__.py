"""What a program built, as plain data: the transformation graph, the configuration and
the :class:`~pyspark_datastream.plan.job.JobPlan` translators receive (never the API objects)."""
