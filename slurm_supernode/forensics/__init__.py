"""See inside a job: per-rank logs, failure causes from error files, stacks of hung ranks."""
