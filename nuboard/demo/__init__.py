"""The demo data set: `nuboard demo [DIR] [--live]`, written through the public API only.

    from nuboard.demo import write_demo, run_live
    demo = write_demo(Path("/tmp/nuboard-demo"))     # about ten seconds; again: nothing written
    demo.runs["llm-pretrain/lr1e-3-s1"]               # a run id

It writes three projects: `datasets` (fineweb-edu v1 and v2, imagenet-100 v1, referencing small
files under <DIR>/.demo-data), `llm-pretrain` (the prepare-data run, twelve training runs that
use fineweb-edu:v2 among them finished, crashed, lost, resumed, forked and two-rank runs, the
checkpoint model:v1 and the eval-mmlu run that uses it) and `vit-ablations`. The runs are
spread over the nine days before today and last minutes to hours: each run's process replays
its day on a clock (clock.py) that plan.py's schedule sets. A marker file,
<DIR>/.nuboard-demo.json, says the demo is there. `import nuboard` does not import this package.
"""
from __future__ import annotations

from .errors import DemoConflictError, DemoFailedError
from .folder import MARKER, Demo, read_demo, write_demo
from .live import LIVE_NAME, run_live
from .plan import PROJECTS, RUNS

__all__ = ["write_demo", "run_live", "read_demo", "Demo", "MARKER", "PROJECTS", "RUNS",
           "LIVE_NAME", "DemoConflictError", "DemoFailedError"]
