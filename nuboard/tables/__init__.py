"""Runs and history as tables: nb.runs (one row a run) and nb.history (long form)."""
