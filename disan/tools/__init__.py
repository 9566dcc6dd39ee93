"""Floor 4, tools: benchmarks (training step, app latency), parameter counts and the results table.

Run as ``python -m disan {bench,latency,params,results}``.
"""
