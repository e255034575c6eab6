"""What a run captures besides its scalars: environment (git, packages, command), GPUs,
system metrics and the console. plan.py decides which of these a rank runs.
"""
