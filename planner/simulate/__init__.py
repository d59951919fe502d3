"""An iteration-level discrete-event simulator of a plan's serving fleet (``planner simulate``).

- ``replica``: one replica's scheduler (vLLM V1 with chunked prefill), decode-only stretches
  priced at once;
- ``traffic``: Poisson arrivals, request sizes (fixed, a mix's buckets, a CSV trace);
- ``fleet``: a service's replicas behind its router (route shares, fewest outstanding);
- ``closed_loop``: N clients on one replica, as serving benchmarks measure;
- ``from_plan``: what to simulate, from a plan and its problem;
- ``stats``: percentiles and the share of requests within target;
- ``run``: a plan's services simulated, the JSON rows.

Every iteration is priced by ``planner.perf.engine.IterationCost``, the same per-step cost
the analytic latency model uses.
"""
