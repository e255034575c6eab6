"""The recording layer: nb.init (start), the Run, timers, fork, launch and ranks, the run's
config, and capture/ (environment, GPUs, system metrics, console).

Imports eventlog, files and artifacts; never the catalog or a face.
"""
