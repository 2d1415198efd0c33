"""What an `analyze` call through `profile-train mcp` costs over the same `profile-train analyze` on the CLI.

One server session (the official Python SDK, mcp==2.3.0, as an agent would drive it) and the CLI as a plain
subprocess, interleaved call by call on the same trace, each writing a fresh output folder. Prints each pair,
the median wall time of each and the ratio MCP / CLI (the median of the per-pair ratios: the machines are noisy).

Usage: .venv/bin/python bench/mcp/bench_mcp_analyze.py BINARY TRACE [PAIRS] [--mode legacy|2026-07-28]
"""
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from mcp import Client, StdioServerParameters


async def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--mode")]
    mode = next((a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--mode=")), "legacy")
    binary, trace = os.path.abspath(args[0]), os.path.abspath(args[1])
    pairs = int(args[2]) if len(args) > 2 else 10
    scratch = tempfile.mkdtemp(prefix="bench_mcp_")
    params = StdioServerParameters(command=binary, args=["mcp", "--root", "/", "--work-dir", scratch],
                                   env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")})
    t_mcp, t_cli, ratios = [], [], []
    async with Client(params, mode=mode, read_timeout_seconds=600) as client:
        await client.list_tools()
        # One warm-up of each (page cache, the binary's pages).
        await client.call_tool("analyze", {"paths": [trace]})
        subprocess.run([binary, "analyze", trace, "--out", os.path.join(scratch, "cli-warm"), "--quiet"], check=True)
        for i in range(pairs):
            order = ("mcp", "cli") if i % 2 == 0 else ("cli", "mcp")
            got = {}
            for which in order:
                t0 = time.perf_counter()
                if which == "mcp":
                    r = await client.call_tool("analyze", {"paths": [trace]})
                    assert not r.is_error, r.content
                else:
                    subprocess.run([binary, "analyze", trace, "--out", os.path.join(scratch, f"cli-{i}"), "--quiet"],
                                   check=True)
                got[which] = time.perf_counter() - t0
            t_mcp.append(got["mcp"])
            t_cli.append(got["cli"])
            ratios.append(got["mcp"] / got["cli"])
            print(f"pair {i + 1:2d}: mcp {got['mcp'] * 1000:8.1f} ms   cli {got['cli'] * 1000:8.1f} ms   ratio {ratios[-1]:.3f}")
    shutil.rmtree(scratch, ignore_errors=True)
    print(f"trace {trace} ({os.path.getsize(trace) / 1e6:.1f} MB), mode {mode}, {pairs} interleaved pairs")
    print(f"median wall: mcp {statistics.median(t_mcp) * 1000:.1f} ms, cli {statistics.median(t_cli) * 1000:.1f} ms")
    print(f"ratio mcp/cli (median of pairs): {statistics.median(ratios):.3f}  "
          f"(min {min(ratios):.3f}, max {max(ratios):.3f})")


if __name__ == "__main__":
    asyncio.run(main())
