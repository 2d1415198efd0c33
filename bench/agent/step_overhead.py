"""Step-time overhead of `profile-train run` on the CPU training script, against a plain run in the same
benchmark (interleaved runs, median of the script's own ms/step). Goal: <= 2%.

usage: python bench/agent/step_overhead.py BUILD_DIR [--runs 5] [--steps 60]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "tests", "agent", "data", "train_slow_loader.py")


def ms_per_step(cmd):
    """(wall ms/step, CPU ms/step) as printed by the training script."""
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    m = re.search(r"\(([\d.]+) ms/step, ([\d.]+) cpu-ms/step\)", out)
    if not m:
        raise RuntimeError("no ms/step in output of %s:\n%s" % (cmd, out))
    return float(m.group(1)), float(m.group(2))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build_dir")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--workers", type=int, default=0)
    a = ap.parse_args()
    binary = os.path.join(a.build_dir, "profile-train")
    train = [sys.executable, SCRIPT, "--workers", str(a.workers), "--steps", str(a.steps), "--sample-ms", "0.5"]
    plain, wrapped = [], []
    with tempfile.TemporaryDirectory() as out:
        for _ in range(a.runs):
            plain.append(ms_per_step(train))
            wrapped.append(ms_per_step([binary, "run", "-q", "--out", out, "--"] + train))
    for i, what in ((0, "wall"), (1, "CPU")):
        p = statistics.median(x[i] for x in plain)
        w = statistics.median(x[i] for x in wrapped)
        print("%-4s plain run         : median %.2f ms/step  (runs: %s)" % (
            what, p, ", ".join("%.2f" % x[i] for x in plain)))
        print("%-4s profile-train run : median %.2f ms/step  (runs: %s)" % (
            what, w, ", ".join("%.2f" % x[i] for x in wrapped)))
        print("%-4s overhead          : %+.2f%%  (goal <= 2%%)" % (what, 100.0 * (w / p - 1.0)))


if __name__ == "__main__":
    main()
