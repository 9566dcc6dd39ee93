"""Floor 6, tools: the commands besides training and evaluation: benchmarks (a training step, the app's
latency, the analyses), parameter counts, the results table, a sentence's HTML report, batch prediction,
paired comparison of checkpoints, and starting the app. They may use every floor below.

Run as ``python -m disan {bench,latency,analysis-bench,params,results,report,predict,compare,app}``.
"""
