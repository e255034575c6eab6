#!/usr/bin/env python3
"""Full-page screenshots of every viewer page, at chosen widths, in the light or dark theme.

    python3 scripts/screenshots.py                         # the demo, 1440 px, light
    python3 scripts/screenshots.py --width 1024 390 --dark --out /tmp/shots
    python3 scripts/screenshots.py --root ~/experiments --pages runs charts

Without --root it writes the demo (nuboard.demo.write_demo) into a temporary folder, and beside
it a project of three runs that log images, histograms, text, a table and audio (media-demo,
for the run-media and charts-media pages) and a hyperparameter sweep of 200 runs (sweep-demo:
config lr, width, opt, seed; train/loss and val/acc; for the parallel, scatter, diff and
charts-grouped pages); with --root, it serves that folder as it is (a demo folder or any
experiments root; the media pages are those of the first project whose newest runs logged
media, the sweep pages those of sweep-demo when there, else of the project with the most runs,
with the views' default fields). It starts `nuboard up ROOT --port 0`, finds a project (the
one with the most runs, sweep-demo aside), a run and two artifact versions through the JSON
twins, and with Playwright's Chromium (/usr/bin/chromium)
saves one PNG per page and width into --out as PAGE-WIDTH[-dark].png, printing each path.
A page that scrolls sideways is reported with "scrolls sideways" after its path; the exit
code is non-zero only on an error. The theme is the browser's prefers-color-scheme, so the
pages follow it as they would for a user who never pressed the theme button.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))                # this checkout's nuboard, for the demo and `nuboard up`
CHROMIUM = "/usr/bin/chromium"
PAGES = ("index", "runs", "runs-query", "run-overview", "run-console", "run-files", "run-charts",
         "run-media", "charts", "charts-media", "timeline", "artifacts", "artifact", "lineage",
         "parallel", "scatter", "diff", "charts-grouped")
MEDIA_PROJECT = "media-demo"      # what the demo root gets beside the demo: runs that log media
SWEEP_PROJECT = "sweep-demo"      # and a hyperparameter sweep, for the sweep pages
SWEEP_PAGES = ("parallel", "scatter", "diff", "charts-grouped")
GROUPED_RUNS = 30                 # the runs of the charts-grouped page (Charts take at most 50)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="example: python3 scripts/screenshots.py --width 1440 1024 390 --dark",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", type=Path, help="serve this folder instead of a fresh demo")
    parser.add_argument("--out", type=Path, default=REPO / "test-screenshots" / "pages",
                        help="where the PNGs go (default: test-screenshots/pages)")
    parser.add_argument("--width", type=int, nargs="+", default=[1440],
                        help="viewport widths in px (default: 1440)")
    parser.add_argument("--dark", action="store_true", help="the dark theme instead of the light")
    parser.add_argument("--pages", nargs="+", choices=PAGES, default=list(PAGES), metavar="PAGE",
                        help=f"which pages (default: all): {', '.join(PAGES)}")
    parser.add_argument("--sweep-runs", type=int, default=200, metavar="N",
                        help="runs of the generated sweep-demo project (default: 200)")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="nuboard-shots-") as tmp:
        root = args.root
        if root is None:
            from nuboard.demo import write_demo
            root = Path(tmp) / "demo"
            write_demo(root, progress=lambda line: None)
            write_media_runs(root)
            if set(SWEEP_PAGES) & set(args.pages):
                write_sweep_runs(root, args.sweep_runs)
        proc, base = serve(root)
        try:
            urls = page_urls(base, args.pages)
            shoot(urls, args.width, args.dark, args.out)
        finally:
            stop(proc)
    return 0


def write_media_runs(root: Path, runs: int = 3, steps: int = 6) -> None:
    """Runs of MEDIA_PROJECT that log, with the real API, a generated 96x96 picture and a
    histogram of weights at each of `steps` steps, a text, a table of predictions with image
    cells, and a second of audio."""
    import numpy as np

    import nuboard as nb
    rng = np.random.default_rng(7)
    y, x = np.mgrid[0:96, 0:96] / 96.0
    for r in range(runs):
        with nb.init(MEDIA_PROJECT, dir=root, run_name=f"diffusion-{r}", system_metrics=False,
                     capture_console=False, capture_env=False, config={"lr": 10 ** -(3 + r)}) as run:
            for i in range(steps):
                step = i * 500 + r * 100
                sharp = (i + 1) / steps
                picture = np.stack([np.sin((x * (3 + r) + y * sharp * 4) * np.pi) * 0.5 + 0.5,
                                    np.cos(((x - 0.5) ** 2 + (y - 0.5) ** 2) * (8 + 6 * i)) * 0.5 + 0.5,
                                    np.clip(rng.normal(0.5, 0.5 * (1 - sharp), (96, 96)), 0, 1)], axis=2)
                caption = f"seed 0, {i + 1}/{steps} of training"
                run.log({"samples/generated": nb.Image(picture, caption=caption),
                         "weights/layer1": nb.Histogram(rng.normal(0, 1.0 / (1 + i * (r + 1) / 3), 4000)),
                         "train/loss": 1.0 / (1 + i + r)}, step=step)
            prompt = "A watercolour of a lighthouse at dusk.\n" + "The model's notes: " + "waves, " * 60
            tone = np.sin(np.arange(16000) * 2 * np.pi * 440 / 16000).astype(np.float32) * 0.3
            run.log({"samples/prompt": prompt,
                     "eval/predictions": nb.Table(columns=["id", "label", "score", "input"], data=[
                         [k, ["cat", "dog", "ship"][k % 3], round(float(rng.random()), 3),
                          nb.Image(rng.integers(0, 256, (16, 16, 3), np.uint8))] for k in range(12)]),
                     "eval/audio": nb.Audio(tone, 16000, caption="440 Hz")}, step=steps * 500)


def write_sweep_runs(root: Path, runs: int = 200, steps: int = 20) -> None:
    """`runs` runs of SWEEP_PROJECT written by the real API, as a random search leaves them:
    config lr (log-uniform, 1e-5 to 1e-1), width, opt (adam, sgd, adamw) and seed; train/loss at
    each of `steps` steps and val/acc every 5, best near each optimizer's own lr, with noise."""
    import math
    import random

    import nuboard as nb
    rnd = random.Random(33)
    best = {"adam": -3.0, "adamw": -2.7, "sgd": -1.5}
    for i in range(runs):
        lr = 10 ** rnd.uniform(-5, -1)
        config = {"lr": lr, "width": rnd.choice((128, 256, 512)),
                  "opt": rnd.choice(("adam", "sgd", "adamw")), "seed": i}
        quality = math.exp(-((math.log10(lr) - best[config["opt"]]) / 1.1) ** 2)
        quality *= 0.8 + 0.1 * (config["width"] // 256) + rnd.gauss(0, 0.03)
        with nb.init(SWEEP_PROJECT, dir=root, run_name=f"sweep-{i:03d}", config=config,
                     system_metrics=False, capture_console=False, capture_env=False) as run:
            for step in range(steps):
                loss = (0.15 + 1.2 * (1 - quality) + 2.0 * math.exp(-step / (3 + 4 * quality))
                        + rnd.gauss(0, 0.03))
                run.add_scalar("train/loss", loss, step=step)
                if step % 5 == 4:
                    acc = 0.1 + 0.85 * quality * (1 - math.exp(-(step + 1) / 6))
                    run.add_scalar("val/acc", acc + rnd.gauss(0, 0.01), step=step)


def sweep_urls(base: str, projects: list[str], runs_of: dict[str, list[dict]]) -> dict[str, str]:
    """The sweep pages: SWEEP_PROJECT's with its fields (parallel coordinates brushed on
    val/acc, coloured by it; lr on log axes; charts grouped by config.opt, mean and a std band),
    else the project with the most runs with the views' defaults (no project with two runs:
    none)."""
    q = urllib.parse.quote
    project = (SWEEP_PROJECT if SWEEP_PROJECT in projects
               else max(projects, key=lambda p: len(runs_of[p]), default=None))
    if project is None or len(runs_of[project]) < 2:
        return {}
    p, ids = q(project), [r["id"] for r in runs_of[project]]
    at = f"{base}/p/{p}"
    grouped = f"{at}/.charts?runs={q(','.join(ids[:GROUPED_RUNS]), safe=',')}"
    urls = {"parallel": f"{at}/.parallel?q=", "scatter": f"{at}/.scatter?q=",
            "diff": f"{at}/.diff?runs={q(','.join(ids[:3]), safe=',')}"}
    if project == SWEEP_PROJECT:
        urls["parallel"] += ("&axes=config.lr,config.width,config.opt,config.seed,train/loss.last,"
                             "val/acc.last&log=config.lr&colour=val/acc.last"
                             "&brush=val/acc.last:0.6:1")
        urls["scatter"] += "&x=config.lr&y=val/acc.last&logx=1"
        urls["charts-grouped"] = f"{grouped}&group=config.opt&band=std"
    else:
        keys = get_json(grouped.replace(f"{base}/p/", f"{base}/api/p/", 1))["group_keys"]
        if keys:
            urls["charts-grouped"] = f"{grouped}&group={q(keys[0][0])}&band=std"
    return urls


def media_urls(base: str, projects: list[str]) -> dict[str, str]:
    """The run-media and charts-media pages: MEDIA_PROJECT's when there, else those of the first
    project whose newest runs logged media (none: no media pages)."""
    q = urllib.parse.quote
    for project in sorted(projects, key=lambda p: p != MEDIA_PROJECT):
        charts = get_json(f"{base}/api/p/{q(project)}/.charts")
        if not charts.get("media_keys"):
            continue
        ids = [r["id"] for r in charts["runs"]]
        run = next(r for r in ids if get_json(f"{base}/api/p/{q(project)}/.charts?runs={q(r)}")["media_keys"])
        return {"charts-media": f"{base}/p/{q(project)}/.charts?runs={q(','.join(ids))}",
                "run-media": f"{base}/p/{q(project)}/.run/{q(run)}?tab=media"}
    return {}


def serve(root: Path) -> tuple[subprocess.Popen, str]:
    """`nuboard up ROOT --port 0` and its base URL (no trailing slash)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "nuboard.cli.main", "up", str(root), "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    line = proc.stdout.readline()
    match = re.search(r"at (http://\S+)/", line)
    if match is None:
        proc.kill()
        raise SystemExit(f"nuboard up printed {line!r}: {proc.stderr.read()}")
    return proc, match.group(1)


def stop(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGINT)
    try:
        proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()


def get_json(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=60) as response:
        return json.load(response)


def page_urls(base: str, wanted: list[str]) -> dict[str, str]:
    """The URL of each wanted page that this root has (no runs: no run pages)."""
    q = urllib.parse.quote
    projects = get_json(f"{base}/api/projects")["projects"]
    runs_of = {p: get_json(f"{base}/api/p/{q(p)}/runs")["runs"] for p in projects}
    others = [p for p in projects if p != SWEEP_PROJECT] or projects   # the sweep: its own pages
    project = max(others, key=lambda p: len(runs_of[p]), default=None)
    urls = {"index": f"{base}/", "artifacts": f"{base}/artifacts"}
    if project is not None:
        p = q(project)
        runs = runs_of[project]
        urls.update({"runs": f"{base}/p/{p}", "runs-query": f"{base}/p/{p}?q=status%3Afinished",
                     "charts": f"{base}/p/{p}/.charts", "timeline": f"{base}/p/{p}/.timeline",
                     "artifacts": f"{base}/p/{p}/.artifacts"})
        if runs:
            run = next((r for r in runs if r.get("status") == "finished" and r.get("world_size") == 1
                        and r.get("name", "").startswith("lr")), runs[-1])
            at = f"{base}/p/{p}/.run/{q(run['id'])}"
            urls.update({"run-overview": at, "run-console": f"{at}?tab=console",
                         "run-files": f"{at}/files/", "run-charts": f"{at}?tab=charts"})
    if {"run-media", "charts-media"} & set(wanted):
        urls.update(media_urls(base, projects))
    if set(SWEEP_PAGES) & set(wanted):
        urls.update(sweep_urls(base, projects, runs_of))
    artifacts = get_json(f"{base}/api/artifacts")["artifacts"]
    if artifacts:
        def at(a: dict) -> str:
            return f"{base}/p/{q(a['project'])}/.artifact/{q(a['name'])}/v{a['latest']}"
        urls["artifact"] = at(max(artifacts, key=lambda a: a["files"]))
        urls["lineage"] = at(next((a for a in artifacts if a["project"] == project), artifacts[0]))
    return {name: urls[name] for name in wanted if name in urls}


def shoot(urls: dict[str, str], widths: list[int], dark: bool, out: Path) -> None:
    from playwright.sync_api import sync_playwright
    out.mkdir(parents=True, exist_ok=True)
    scheme = "dark" if dark else "light"
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True,
                                     args=["--no-sandbox", "--disable-gpu", "--no-first-run",
                                           "--disable-background-networking", "--disable-sync"])
        try:
            for width in widths:
                context = browser.new_context(viewport={"width": width, "height": 900},
                                              color_scheme=scheme, bypass_csp=True)
                page = context.new_page()
                for name, url in urls.items():
                    page.goto(url, wait_until="load")
                    settle(page, name)
                    path = out / f"{name}-{width}{'-dark' if dark else ''}.png"
                    page.screenshot(path=str(path), full_page=True)
                    wide = page.evaluate("document.scrollingElement.scrollWidth > window.innerWidth")
                    print(f"{path}{'  scrolls sideways' if wide else ''}", flush=True)
                context.close()
        finally:
            browser.close()


def settle(page, name: str) -> None:
    """Wait for what the page draws after loading (charts, the timeline), a few seconds at most."""
    try:
        page.wait_for_load_state("networkidle", timeout=4000)
    except Exception:                       # a live page keeps polling: take it as it is
        pass
    selector = {"charts": "figure.chart canvas", "run-charts": "figure.chart canvas",
                "charts-media": ".media-inner", "run-media": ".media-inner",
                "timeline": "#timeline svg", "lineage": "#lineage svg",
                "parallel": "#parallel[data-drawn]", "scatter": "#scatter[data-drawn]",
                "charts-grouped": ".legend-groups li"}.get(name)
    if selector:
        try:
            page.wait_for_selector(selector, timeout=5000)
        except Exception:
            pass
    if name in ("charts", "run-charts", "charts-media", "run-media", "charts-grouped"):
        # they load as they scroll into view
        height = page.evaluate("document.scrollingElement.scrollHeight")
        for y in range(0, height, 600):
            page.evaluate(f"window.scrollTo(0, {y})")
            time.sleep(0.15)
        page.evaluate("window.scrollTo(0, 0)")
        try:
            page.wait_for_load_state("networkidle", timeout=4000)
        except Exception:
            pass
    time.sleep(0.3)


if __name__ == "__main__":
    sys.exit(main())
