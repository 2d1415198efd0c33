#!/usr/bin/env python3
"""Synthetic Kineto traces of one data-parallel job, one file per rank (benchmarks of the job summary; tests of
the collectives matching). Each step of each rank: a DataLoader wait, a forward/backward of GEMM and elementwise
kernels launched by ATen operators, then `buckets` NCCL all-reduces with PyTorch 2.x collective args (group "0",
sequence numbers) whose durations end together on every rank: the last rank to arrive waits for nobody. One rank
(`--late-rank`) loads its data `--late-ms` longer, so the others wait for it in their first all-reduce.

usage: make_rank_job.py OUT_DIR RANKS [--steps N] [--kernels K] [--buckets B] [--late-rank R] [--late-ms MS]
                        [--no-distributed]   (drop distributedInfo: the same files, not one job)
Writes OUT_DIR/rank<R>.pt.trace.json and prints the total size."""
import argparse
import json
import os


def rank_trace(rank, world, args):
    ev = []
    pid, tid, stream, nccl_stream = 1000 + rank, 1, 7, 20
    t = 1_000_000.0  # us
    ext = corr = 0
    seq = 0
    bucket_elems = [6_250_000, 4_000_000, 2_500_000, 1_000_000, 500_000, 250_000, 125_000, 62_500]
    for s in range(args.steps):
        step_start = t
        load = 2000.0 + (args.late_ms * 1000.0 if rank == args.late_rank else 0.0) + (rank % 3) * 10.0
        late_load = 2000.0 + args.late_ms * 1000.0
        compute = args.kernels * 40.0
        step_len = late_load + compute + args.buckets * 400.0 + 500.0
        ev.append({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d" % s, "pid": pid, "tid": tid,
                   "ts": step_start, "dur": step_len})
        ev.append({"ph": "X", "cat": "user_annotation", "name": "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
                   "pid": pid, "tid": tid, "ts": step_start + 1, "dur": load - 2})
        t = step_start + load
        for k in range(args.kernels):
            ext += 1
            corr += 1
            name = "aten::mm" if k % 3 == 0 else "aten::add"
            kname = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64" if k % 3 == 0 else \
                "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>"
            ev.append({"ph": "X", "cat": "cpu_op", "name": name, "pid": pid, "tid": tid, "ts": t, "dur": 8,
                       "args": {"External id": ext}})
            ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": pid, "tid": tid,
                       "ts": t + 2, "dur": 4, "args": {"External id": ext, "correlation": corr}})
            ev.append({"ph": "X", "cat": "kernel", "name": kname, "pid": 0, "tid": stream, "ts": t + 5, "dur": 35,
                       "args": {"External id": ext, "correlation": corr, "device": 0, "stream": stream,
                                "grid": [132, 1, 1], "block": [256, 1, 1]}})
            t += 40
        # The all-reduces: the first waits for the late rank; all end at the same time on every rank.
        all_in = step_start + late_load + compute
        for b in range(args.buckets):
            elems = bucket_elems[b % len(bucket_elems)]
            transfer = 50.0 + elems / 25_000.0  # us
            ext += 1
            corr += 1
            seq += 1
            coll = {"Collective name": "allreduce", "In msg nelems": elems, "Out msg nelems": elems, "Group size": world,
                    "dtype": "Float", "In split size": "[]", "Out split size": "[]", "Process Group Name": "0",
                    "Process Group Description": "default_pg", "Process Group Ranks": "[%s]" % ", ".join(
                        str(i) for i in range(min(world, 8))) + ("..." if world > 8 else ""), "Seq": seq}
            arrive = t if b == 0 else max(t, all_in)
            end = (all_in if b == 0 else arrive) + transfer
            ev.append({"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": pid, "tid": tid, "ts": t,
                       "dur": 10, "args": dict(coll, **{"External id": ext})})
            ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernelExC", "pid": pid, "tid": tid,
                       "ts": t + 2, "dur": 5, "args": {"External id": ext, "correlation": corr}})
            ev.append({"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
                       "pid": 0, "tid": nccl_stream, "ts": arrive, "dur": end - arrive,
                       "args": dict(coll, **{"External id": ext, "correlation": corr, "device": 0, "stream": nccl_stream})})
            t = end
        t = step_start + step_len
    doc = {"schemaVersion": 1,
           "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85520809984,
                                 "computeMajor": 9, "computeMinor": 0, "numSms": 132, "maxThreadsPerBlock": 1024,
                                 "maxThreadsPerMultiProcessor": 2048, "regsPerBlock": 65536, "regsPerMultiprocessor": 65536,
                                 "warpSize": 32, "sharedMemPerBlock": 49152, "sharedMemPerMultiprocessor": 233472,
                                 "sharedMemPerBlockOptin": 232448}],
           "traceEvents": ev, "displayTimeUnit": "ms", "baseTimeNanoseconds": 1700000000000000000}
    if not args.no_distributed:
        doc["distributedInfo"] = {"backend": "nccl", "rank": rank, "world_size": world}
    return doc


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("ranks", type=int)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--kernels", type=int, default=60)
    ap.add_argument("--buckets", type=int, default=8)
    ap.add_argument("--late-rank", type=int, default=3)
    ap.add_argument("--late-ms", type=float, default=4.0)
    ap.add_argument("--no-distributed", action="store_true")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    total = 0
    for r in range(args.ranks):
        path = os.path.join(args.out, "rank%d.pt.trace.json" % r)
        with open(path, "w") as f:
            json.dump(rank_trace(r, args.ranks, args), f)
        total += os.path.getsize(path)
    print("%d rank files, %.1f MB in all" % (args.ranks, total / 1e6))


if __name__ == "__main__":
    main()
