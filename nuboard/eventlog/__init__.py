"""The event log: the binary format of events-rank<N>.log, its writer, the one reader of a
run's scalars (data.parquet when current, else the logs) and the parquet copy.

Imports the files layer, the standard library and, for data.parquet only, pyarrow.
"""
