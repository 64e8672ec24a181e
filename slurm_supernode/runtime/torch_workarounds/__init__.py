"""Where snrun works around torch, and only here: each module says what torch does that costs
a job, and a canary test (tests/runtime/test_torch_workarounds_canary.py) fails once torch no
longer does it, so the workaround can go. Both run by path in the agent's torchrun command
(also inside a job's container, where snrun is not installed): standard library only.

- ``fast_exit.py``: torchrun leaves with ``os._exit`` once its report is out, without the
  interpreter's teardown (its final garbage collection over torch's objects: 4.5-12 s on a
  loaded node).
- ``exception_log.py``: torch's log formatter imports torch's compiler to format a failed
  worker's record (2.5-36 s per failing node); the traceback is formatted before it.
"""
