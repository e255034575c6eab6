"""The files layer: where things are on disk and how shared files are read and written.

Standard library only. Paths and names (layout, names), JSON files and the one lock (jsonfile),
run.json's reads and updates (runjson), a run's status and heartbeat (status), the edits log
(edits), record helpers (records) and SIGTERM handling (sigterm). Everything above builds on
these; nothing here imports upward.
"""
