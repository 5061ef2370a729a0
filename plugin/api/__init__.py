"""The user API: the environment, streams, windowed streams, job clients and their settings.

Building a program fills a job graph (``pyspark_datastream.plan``); running it hands a
:class:`~pyspark_datastream.plan.job.JobPlan` to the translation layer.
"""
