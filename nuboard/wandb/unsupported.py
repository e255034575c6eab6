"""The one error of a W&B call that nuboard.wandb does not offer (wandb.watch, run.log_artifact,
wandb.Video...): a NotImplementedError naming the call, and an AttributeError too, so that
`hasattr(wandb, "watch")` is False for code that probes for a feature first."""
from __future__ import annotations

# What to use instead, for the calls a script is most likely to meet.
INSTEAD = {
    "watch": "log gradients or weights yourself, e.g. wandb.log({'grad/w': wandb.Histogram(w.grad)})",
    "save": "copy the file into wandb.run.dir (the run's files/ folder), or use run.add_artifact",
    "Artifact": "use nuboard's artifacts: nb.add_artifact or the run's add_artifact",
    "log_artifact": "use nuboard's artifacts: the run's add_artifact (docs/artifacts.md)",
    "use_artifact": "use nuboard's artifacts: the run's use_artifact (docs/artifacts.md)",
    "log_model": "use nuboard's artifacts: the run's add_artifact(name, path, type='model')",
    "Api": "query runs with nb.runs and nb.history (docs/tables.md)",
    "sweep": "start runs from your own loop; nb.runs compares them",
    "agent": "start runs from your own loop; nb.runs compares them",
}
GENERIC = "nuboard.wandb offers init, log, config, summary, define_metric, alert, finish and the media types"


class Unsupported(NotImplementedError, AttributeError):
    """A W&B call that nuboard.wandb does not offer."""


def unsupported(call: str, name: str) -> Unsupported:
    """The error of `call` ('wandb.watch', 'run.log_code'); `name` picks the advice."""
    return Unsupported(f"{call} is not supported by nuboard.wandb: {INSTEAD.get(name, GENERIC)} "
                       "(docs/integrations.md, 'Switch from W&B in one line').")
