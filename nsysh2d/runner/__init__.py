"""Orchestration: a job is one analysis of one input (jobs.py); run.py maps many with progress through one of
executors.py's strategies (serial, a process pool, or cluster.py's Dask); results come from the cache when they can."""
