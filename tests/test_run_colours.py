"""A run's colour is a pure function of its id: the same in every process, a shade per rank."""
import subprocess
import sys

from nuboard.web.run_colours import PALETTE, rank_colour, run_colour


def test_same_colour_for_the_same_id_in_another_process():
    ids = [f"2026120{i}-0000{i}-abcd{i}" for i in range(8)]
    here = [run_colour(r) for r in ids]
    code = ("import sys; from nuboard.web.run_colours import run_colour; "
            "print(','.join(run_colour(r) for r in sys.argv[1:]))")
    there = subprocess.run([sys.executable, "-c", code, *ids], capture_output=True, text=True,
                           check=True).stdout.strip().split(",")
    assert here == there
    assert all(c in PALETTE for c in here)


def test_palette_is_twenty_distinct_colours_and_ids_spread_over_it():
    assert len(set(PALETTE)) == len(PALETTE) == 20
    used = {run_colour(f"run-{i}") for i in range(200)}
    assert len(used) >= 18


def test_ranks_are_distinct_shades_of_the_run_colour():
    shades = [rank_colour("r1", k) for k in range(6)]
    assert shades[0] == run_colour("r1")
    assert len(set(shades)) == 6
    assert all(len(s) == 7 and s.startswith("#") for s in shades)
