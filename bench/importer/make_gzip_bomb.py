#!/usr/bin/env python3
"""Writes a gzip bomb for the importer limits: a two-event Kineto trace whose gap between the events holds
GIB GiB of spaces, as concatenated gzip members (one 64 MiB member of spaces is ~64 KB compressed, so a
20 GiB bomb is ~20 MB on disk, like the one of issue 16).  Usage: make_gzip_bomb.py OUT.json.gz GIB"""
import gzip
import sys

out, gib = sys.argv[1], float(sys.argv[2])
head = b'{"traceEvents": [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 1000, "dur": 100},'
tail = b'{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1010, "dur": 50}]}'
spaces = gzip.compress(b" " * (64 << 20), compresslevel=9)
with open(out, "wb") as f:
    f.write(gzip.compress(head))
    for _ in range(int(gib * 16)):
        f.write(spaces)
    f.write(gzip.compress(tail))
