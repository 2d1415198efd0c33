#!/usr/bin/env python3
"""Reference figures for the memory analysis, from the TensorBoard PyTorch profiler plugin's own parser.

Runs torch-tb-profiler 0.4.3's memory parsing (RunProfileData.parse -> MemorySnapshot) on Kineto traces and prints,
per trace, exact byte figures (not the KB-rounded UI values):
  - peaks: MemorySnapshot.get_peak_memory() per device ("CPU", "GPU0", ...): max "Total Allocated"
  - curve: the memory curve's points per device (records with Addr and both running totals, as the plugin's
    get_memory_curve keeps them): count, max allocated, reserved at that point, max reserved
  - operators: MemorySnapshot.get_memory_statistics() per device and operator name:
    [calls, increase, self_increase, alloc_count, self_alloc_count, alloc_bytes, self_alloc_bytes]

Usage (the plugin lives in a test-only venv, never the project's):
  python3 -m venv /tmp/tbvenv && /tmp/tbvenv/bin/pip install torch-tb-profiler==0.4.3
  /tmp/tbvenv/bin/python bench/memory/tb_plugin_reference.py TRACES_DIR > tests/data/memory/tb_plugin_reference.json
The output is committed as tests/data/memory/tb_plugin_reference.json; memory_analysis_tests compares
profile-train's memory section with it.
"""
import json
import sys
import tempfile
from pathlib import Path

from torch_tb_profiler import __version__ as plugin_version
from torch_tb_profiler.profiler.data import RunProfileData
from torch_tb_profiler.profiler.memory_parser import MemoryMetrics

TRACES = [
    "tracelens/h100/Falconsai_nsfw_image_detection__1016002.json.gz",
    "tracelens/h100/facebook_timesformer-base-finetuned-k400__1016002.json.gz",
    "tracelens/h100/google_owlv2-large-patch14-ensemble__1016001.json.gz",
    "tracelens/mi300/Falconsai_nsfw_image_detection__1016002.json.gz",
    "tracelens/mi300/facebook_timesformer-base-finetuned-k400__1016002.json.gz",
    "tracelens/mi300/google_owlv2-large-patch14-ensemble__1016001.json.gz",
    "kineto_tb_plugin/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz",
    "kineto_tb_plugin/resnet50_num_workers_4/worker0.1623212756351.pt.trace.json.gz",
]


def device_name(r):
    return r.device_name


def figures(path, cache_dir):
    profile = RunProfileData.parse("worker0", 0, str(path), cache_dir)
    snap = profile.memory_snapshot
    out = {"memory_records": 0, "peaks": {}, "curve": {}, "operators": {}}
    if snap is None:
        return out
    out["memory_records"] = len(snap.memory_records)
    for (dtype, did), peak in sorted(snap.get_peak_memory().items(), key=lambda kv: str(kv[0])):
        # The plugin names CPU and CUDA devices only; records of other device types have no name there.
        name = "CPU" if dtype == 0 else f"GPU{did}" if dtype == 1 else f"unnamed({dtype},{did})"
        out["peaks"][name] = int(peak)
    curve = {}
    for r in snap.memory_records:  # the points get_memory_curve draws
        if r.addr is None or r.total_allocated != r.total_allocated or r.total_reserved != r.total_reserved:
            continue
        if r.device_name is None:  # a device type the plugin does not name (its own curve code fails on these)
            continue
        c = curve.setdefault(r.device_name, {"points": 0, "peak_allocated": -1, "reserved_at_peak": -1,
                                              "peak_reserved": -1})
        c["points"] += 1
        if r.total_allocated > c["peak_allocated"]:
            c["peak_allocated"] = int(r.total_allocated)
            c["reserved_at_peak"] = int(r.total_reserved)
        c["peak_reserved"] = max(c["peak_reserved"], int(r.total_reserved))
    out["curve"] = curve
    stats = snap.get_memory_statistics(profile.tid2tree)
    for dev in sorted(stats):
        rows = {}
        for op, v in sorted(stats[dev].items()):
            rows[op] = [int(v[6]), int(v[MemoryMetrics.IncreaseSize]), int(v[MemoryMetrics.SelfIncreaseSize]),
                        int(v[MemoryMetrics.AllocationCount]), int(v[MemoryMetrics.SelfAllocationCount]),
                        int(v[MemoryMetrics.AllocationSize]), int(v[MemoryMetrics.SelfAllocationSize])]
        out["operators"][dev] = rows
    return out


def main():
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "/work/shared/traces")
    result = {"plugin": "torch-tb-profiler " + plugin_version,
              "operator_columns": ["calls", "increase", "self_increase", "alloc_count", "self_alloc_count",
                                   "alloc_bytes", "self_alloc_bytes"],
              "traces": {}}
    with tempfile.TemporaryDirectory() as cache:
        for rel in TRACES:
            result["traces"][rel] = figures(root / rel, cache)
    json.dump(result, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
