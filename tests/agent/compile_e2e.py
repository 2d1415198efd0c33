"""End to end: a real compiled CPU training loop (tests/agent/data/train_compiled.py: an `.item()` branch and a
`print` in forward, two graph breaks) through the two ways a user meets it:
  1. torch.profiler's Kineto trace -> `profile-train analyze`: the compilation section from torch's own ranges
     (3 forward + 3 backward graphs per step, 2 breaks per step), remove-graph-breaks bounded and planned first;
  2. `profile-train run` with no change to the program: facts.compile's breaks are the lines and reasons
     torch._dynamo.explain gives for the same model, the terminal's Compile line names them, compile time is
     kept out of the steady steps; the same model without the breaks gets no break and no such advice.
usage: compile_e2e.py PROFILE_TRAIN WORKDIR   (run with the venv's python; exit 77 without torch)"""
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAM = os.path.join(HERE, "data", "train_compiled.py")
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


def run(cmd, cwd, timeout=300):
    p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)
    return p.returncode, p.stdout


def main():
    try:
        import torch  # noqa: F401
    except ImportError:
        print("SKIP: no torch in this python")
        return 77
    binary, work = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    py = sys.executable

    # What dynamo itself says about the model.
    rc, log = run([py, PROGRAM, "--explain", "explain.jsonl"], work)
    check(rc == 0, "explain ran (rc %d)" % rc)
    expected = [json.loads(l) for l in open(os.path.join(work, "explain.jsonl"))] if rc == 0 else []
    check(len(expected) == 2, "torch._dynamo.explain sees 2 breaks: %s" % expected)

    # 1. Kineto trace -> analyze.
    rc, log = run([py, PROGRAM, "--kineto", "kineto.json", "--steps", "10"], work)
    check(rc == 0, "the profiled loop ran (rc %d)" % rc)
    rc, out = run([binary, "analyze", "kineto.json", "--out", "analyzed", "--format", "json,text"], work)
    check(rc == 0, "analyze exit 0 (rc %d)" % rc)
    r = json.load(open(os.path.join(work, "analyzed", "report.json")))
    c = r.get("compilation") or {}
    check(r["schema_version"] == "1.5", "schema 1.5")
    check(c.get("compiled") is True, "compiled")
    check(c.get("forward_graphs_per_step") == 3 and c.get("backward_graphs_per_step") == 3,
          "3 forward + 3 backward graphs per step: %s / %s" % (c.get("forward_graphs_per_step"), c.get("backward_graphs_per_step")))
    check(c.get("frames_per_step") == 3, "3 compiled frames per step (the model and two resume functions): %s" % c.get("frames_per_step"))
    check(c.get("graph_breaks_per_step") == 2, "2 graph breaks per step from the trace: %s" % c.get("graph_breaks_per_step"))
    host, eager = c.get("host_compiled_share"), c.get("eager_in_frames_share")
    check(host is not None and 0.2 < host < 1, "host time in compiled graphs: %s" % host)
    check(eager is not None and 0 < eager < 0.5 and host + eager <= 1, "eager time between the graphs: %s" % eager)
    plan = [s["id"] for s in (r.get("plan") or {}).get("steps", [])]
    check(plan[:1] == ["remove-graph-breaks"], "remove-graph-breaks leads the plan: %s" % plan)
    rec = {x["id"]: x for x in r["recommendations"]}
    rgb = rec.get("remove-graph-breaks", {})
    check(rgb.get("removable_share") == eager, "its bound is the eager share: %s" % rgb.get("removable_share"))
    check("fuse-memory-bound" not in rec, "no 'use torch.compile' advice to compiled code")
    check("2 graph breaks/step (seen in the trace)" in out, "terminal Compile line")

    # 2. run, zero code.
    rc, out = run([binary, "run", "--out", "run", "--", py, PROGRAM, "--steps", "12"], work)
    check(rc == 0, "run exit 0 (rc %d)" % rc)
    r = json.load(open(os.path.join(work, "run", "report.json")))
    f = r["facts"].get("compile") or {}
    got = []
    for b in f.get("breaks", []):
        where = b.get("where") or ""
        file, _, line = where.rpartition(":")
        got.append((os.path.basename(file), int(line) if line.isdigit() else None, b["reason"]))
    want = [(e["file"], e["line"], e["reason"]) for e in expected]
    check(sorted((g[0], g[1]) for g in got) == sorted((w[0], w[1]) for w in want),
          "facts.compile.breaks at explain's lines: %s vs %s" % (got, want))
    check(all(any(g[2].startswith(w[2]) for g in got if g[1] == w[1]) for w in want),
          "with explain's reasons: %s" % [g[2] for g in got])
    check(f.get("graph_breaks", 0) >= 2, "dynamo counted the breaks: %s" % f.get("graph_breaks"))
    check(f.get("unique_graphs", 0) >= 3, "unique graphs: %s" % f.get("unique_graphs"))
    check(f.get("compile_time_s", 0) > 0, "compile time: %s" % f.get("compile_time_s"))
    c = r.get("compilation") or {}
    check(c.get("compiled") is True and c.get("graph_breaks") == f.get("graph_breaks"), "section from the facts")
    steady_ms = r["steps"]["mean_ms"] * r["steps"]["count"] if "mean_ms" in r["steps"] else None
    check(c.get("compile_in_window_ms") is not None and
          (steady_ms is None or c["compile_in_window_ms"] < 0.05 * steady_ms),
          "compile time kept out of the steady steps: %s ms in them" % c.get("compile_in_window_ms"))
    check(c.get("breaks_summary", "").count("train_compiled.py:") == 2, "breaks_summary: %s" % c.get("breaks_summary"))
    line = next((l for l in out.splitlines() if l.startswith("Compile ")), "")
    check("2 graph breaks (" in line and "train_compiled.py:%d" % want[0][1] in line if want else False,
          "terminal Compile line names the lines: %s" % line)
    rec = {x["id"]: x for x in r["recommendations"]}
    check("remove-graph-breaks" in rec, "remove-graph-breaks fires under run")
    # The .item() value fed to the resume function is a Python float dynamo specialized on: one recompile,
    # during the warm-up steps, so a note and no bound.
    if f.get("recompiles", 0) > 0:
        check(rec.get("avoid-recompiles", {}).get("evidence_level") == "note",
              "avoid-recompiles is a note: %s" % rec.get("avoid-recompiles", {}).get("evidence_level"))
        item_line = min(w[1] for w in want) if want else -1  # the .item() break comes first
        check(any("train_compiled.py:%d " % item_line in (x.get("where") or "") for x in f.get("recompile_reasons", [])),
              "the recompile names the resume function after the .item() break: %s" % f.get("recompile_reasons"))

    # The same model without the breaks.
    rc, out = run([binary, "run", "--out", "run-nobreaks", "--", py, PROGRAM, "--steps", "8", "--no-breaks"], work)
    check(rc == 0, "run (no breaks) exit 0 (rc %d)" % rc)
    r = json.load(open(os.path.join(work, "run-nobreaks", "report.json")))
    f = r["facts"].get("compile") or {}
    check(f.get("graph_breaks") == 0 and f.get("breaks") == [], "no break recorded: %s" % f.get("breaks"))
    check(f.get("unique_graphs") == 1, "one graph: %s" % f.get("unique_graphs"))
    check("remove-graph-breaks" not in {x["id"] for x in r["recommendations"]}, "no remove-graph-breaks")

    # Planted recompiles: the batch size cycles through 4 sizes with dynamic=False; the steps after the warm-up
    # meet new shapes too, so dynamo recompiles inside the window and avoid-recompiles is bounded, naming the guard.
    rc, out = run([binary, "run", "--out", "run-shapes", "--warmup-steps", "1", "--", py, PROGRAM, "--steps", "10",
                   "--no-breaks", "--shapes", "4"], work)
    check(rc == 0, "run (changing shapes) exit 0 (rc %d)" % rc)
    r = json.load(open(os.path.join(work, "run-shapes", "report.json")))
    f = r["facts"].get("compile") or {}
    check(f.get("recompiles", 0) >= 3, "dynamo recompiled for each new shape: %s" % f.get("recompiles"))
    reasons = " ".join(x.get("reason", "") for x in f.get("recompile_reasons", []))
    check("size" in reasons or "shape" in reasons, "the guard that failed names the size: %s" % reasons[:300])
    c = r.get("compilation") or {}
    check(c.get("recompiles") == f.get("recompiles") and c.get("recompiles_summary"),
          "compilation.recompiles and its summary: %s / %s" % (c.get("recompiles"), c.get("recompiles_summary")))
    rec = {x["id"]: x for x in r["recommendations"]}
    check("avoid-recompiles" in rec, "avoid-recompiles fires on planted recompiles")
    check("cuda-graphs" not in rec, "no CUDA graphs for shapes that change")
    line = next((l for l in out.splitlines() if l.startswith("Compile ")), "")
    check("recompile" in line, "terminal Compile line counts the recompiles: %s" % line)

    # mode="reduce-overhead" (CUDA graphs; on the CPU it compiles and skips the graphs): the mode is recorded and
    # the CUDA-graph advice, which it already applies, is never given.
    rc, out = run([binary, "run", "--out", "run-ro", "--", py, PROGRAM, "--steps", "8", "--no-breaks",
                   "--mode", "reduce-overhead"], work)
    check(rc == 0, "run (reduce-overhead) exit 0 (rc %d)" % rc)
    r = json.load(open(os.path.join(work, "run-ro", "report.json")))
    c = r.get("compilation") or {}
    check(c.get("modes") == ["reduce-overhead"], "compilation.modes: %s" % c.get("modes"))
    check("cuda-graphs" not in {x["id"] for x in r["recommendations"]}, "no cuda-graphs advice under reduce-overhead")

    print("%d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
