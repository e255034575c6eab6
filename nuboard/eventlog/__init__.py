"""The event log: the binary format of events-rank<N>.log, its writer (writer), its reader
(reader), the parquet copy (parquet, the one module that decodes data.parquet) and the one
choice between them (source: data.parquet when current, else the logs).

Imports the files layer, the standard library and, for data.parquet only, pyarrow.
"""
