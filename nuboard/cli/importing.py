"""`nuboard import tensorboard|mlflow`: history from other trackers, as ordinary runs."""
from __future__ import annotations

import click


@click.group("import")
def import_() -> None:
    """Import runs from TensorBoard event files or MLflow.

    \b
    Example:
      nuboard import tensorboard ./runs --project llm
    """
