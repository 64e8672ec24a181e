"""A job's chain of attempts: its ledger, its status, the chains that wait on it, and the end
of a chain whose supervisor died. Read by the supervisor and by the API alike."""
