"""Trainer integrations: a Lightning logger and a Transformers callback that log to NuBoard."""
