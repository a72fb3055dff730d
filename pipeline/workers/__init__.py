"""Nightly work on worker processes (`mempipe worker`, `[workers]`): with `workers.enabled` on
PostgreSQL, a run hands each stage's items to workers through procrastinate's job queue and waits
for them; without it everything runs in the run's own process.

- jobs.py: what a run hands out (one job per partition-day, per partition's past weeks, per group
  of merges), with their keys and locks: planned without a database
- dispatch.py: the run's side: defer a stage's jobs, wait (retrying the jobs of dead workers),
  take in their counts; the next stage only after
- tasks.py: the worker's side of a job: the stage function on a RunContext built in the worker,
  then its counts and report
- worker.py: a worker process (procrastinate's worker, one mempipe App and summarizer for all jobs)
- queue.py: procrastinate wiring: the queue app, its schema (`mempipe db upgrade`), PostgreSQL only

ARCHITECTURE.md ("Workers") states the contract.
"""
