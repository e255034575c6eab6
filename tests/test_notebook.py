"""NuBoard in a notebook (issue 34, item 5): a run shows itself as HTML with its status, config
and last values, user text escaped; nb.show starts one viewer in the background and gives its
URL (an IFrame in IPython), and the run's HTML then links to its page there."""
from __future__ import annotations

import urllib.request

from helpers import QUIET

import nuboard as nb
from nuboard import notebook


def test_a_run_shows_its_status_config_and_last_values_escaped(root):
    run = nb.init("llm", dir=root, run_name="<b>bold</b>", config={"lr": 0.001, "model": {"w": 8}},
                  **QUIET)
    run.add_scalar("train/loss", 2.5, step=0)
    run.add_scalar("train/loss", 1.25, step=1)
    shown = run._repr_html_()
    assert "running" in shown and "&lt;b&gt;bold&lt;/b&gt;" in shown and "<b>bold</b>" not in shown
    assert "<td>lr</td><td>0.001</td>" in shown and "<td>model.w</td><td>8</td>" in shown
    assert "<td>train/loss</td><td>1.25</td>" in shown
    run.finish()
    assert "finished" in run._repr_html_()


def test_show_starts_one_viewer_and_runs_link_to_it(root):
    with nb.init("llm", dir=root, run_name="linked", **QUIET) as run:
        run.add_scalar("train/loss", 1.0, step=0)
    try:
        first = nb.show("llm", dir=root)
        url = first if isinstance(first, str) else first.src
        assert url.endswith("/p/llm")
        again = nb.show("llm", dir=root)
        assert (again if isinstance(again, str) else again.src) == url     # the same viewer
        with urllib.request.urlopen(url) as reply:
            assert reply.status == 200 and run.id in reply.read().decode()
        assert f'{url}/.run/{run.id}"' in run._repr_html_()
    finally:
        proc = notebook._viewer.get("process")
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=30)
        notebook._viewer.clear()
