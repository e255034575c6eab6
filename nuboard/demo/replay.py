"""Run a demo job on its replay clock: `python .../nuboard/demo/replay.py KEY --dir DIR ...`.

Started as a script by path, so nothing of nuboard is imported before the clock is installed
(run.py takes `time.time` when it is imported); then it runs nuboard.demo.job as `-m` would.
"""
import os
import runpy
import sys

if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    import importlib.util
    spec = importlib.util.spec_from_file_location("nuboard.demo.clock",
                                                  os.path.join(here, "clock.py"))
    clock = importlib.util.module_from_spec(spec)
    sys.modules["nuboard.demo.clock"] = clock        # the one the job's `from .clock` finds
    spec.loader.exec_module(clock)
    clock.install_from_env()
    sys.argv[0] = "nuboard.demo.job"
    runpy.run_module("nuboard.demo.job", run_name="__main__", alter_sys=True)
