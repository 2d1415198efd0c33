#!/usr/bin/env python3
"""Builds a large, valid Kineto trace by replicating the real events of one trace (stdlib only).

Usage: make_big_trace.py SOURCE(.json|.json.gz) OUT.json MIN_MB

Each copy shifts timestamps by the source's span (+1 ms) and renumbers ProfilerStep#N, correlation ids,
flow ids and External ids, so the result has consecutive, non-overlapping ProfilerStep windows and unique
join keys. Prints the number of copies, events and bytes written.
"""
import gzip
import json
import sys


def main():
    src, out, min_mb = sys.argv[1], sys.argv[2], float(sys.argv[3])
    opener = gzip.open if open(src, "rb").read(2) == b"\x1f\x8b" else open
    with opener(src, "rt") as f:
        doc = json.load(f)
    events = doc["traceEvents"]
    ts = [e["ts"] for e in events if isinstance(e.get("ts"), (int, float))]
    ends = [e["ts"] + e.get("dur", 0) for e in events if isinstance(e.get("ts"), (int, float))]
    span = int(max(ends) - min(ts)) + 1000
    steps = [int(e["name"].split("#")[1]) for e in events
             if e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#")]
    step_stride = (max(steps) - min(steps) + 1) if steps else 0
    id_stride = 10_000_000
    header = {k: v for k, v in doc.items() if k != "traceEvents"}
    min_bytes = int(min_mb * 1e6)
    written = 0
    n_events = 0
    copies = 0
    with open(out, "w") as f:
        head = json.dumps(header)[:-1]  # drop the closing brace
        f.write(head + (", " if header else "") + '"traceEvents": [\n')
        written += len(head) + 20
        first = True
        while written < min_bytes:
            shift = copies * span
            for e in events:
                if copies > 0:
                    e = dict(e)
                    if isinstance(e.get("ts"), (int, float)):
                        e["ts"] = e["ts"] + shift
                    if e.get("ph") in ("s", "f", "t") and isinstance(e.get("id"), int):
                        e["id"] = e["id"] + copies * id_stride
                    name = e.get("name", "")
                    if isinstance(name, str) and name.startswith("ProfilerStep#"):
                        e["name"] = "ProfilerStep#%d" % (int(name.split("#")[1]) + copies * step_stride)
                    args = e.get("args")
                    if isinstance(args, dict):
                        args = dict(args)
                        for k in ("correlation", "External id", "external id"):
                            if isinstance(args.get(k), int) and args[k] >= 0:
                                args[k] = args[k] + copies * id_stride
                        if "external ts" in args and isinstance(args["external ts"], (int, float)):
                            args["external ts"] = args["external ts"] + shift
                        e["args"] = args
                line = ("" if first else ",\n") + json.dumps(e)
                first = False
                f.write(line)
                written += len(line)
                n_events += 1
            copies += 1
        f.write("\n]}\n")
    print("copies=%d events=%d bytes=%d" % (copies, n_events, written))


if __name__ == "__main__":
    main()
