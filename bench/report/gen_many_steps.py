# Synthetic Kineto trace: N CPU steps (ProfilerStep#i, 100 us each, every 1000th 500 us) with one aten::mm inside.
# Used by bench/results/report-steps-2026-12-01.md: `python3 bench/report/gen_many_steps.py 1000000 steps1e6.json`.
import sys
n = int(sys.argv[1]); out = sys.argv[2]
with open(out, "w") as f:
    f.write('{"schemaVersion": 1, "traceEvents": [\n')
    ts = 1000
    for i in range(n):
        dur = 500 if i % 1000 == 999 else 100
        sep = "," if i else ""
        f.write(f'{sep}{{"ph":"X","cat":"user_annotation","name":"ProfilerStep#{i}","pid":1,"tid":1,"ts":{ts},"dur":{dur}}},'
                f'{{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":{ts+1},"dur":{dur-2}}}\n')
        ts += dur
    f.write("]}\n")
