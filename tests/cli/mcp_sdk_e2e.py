"""End to end: the official MCP Python SDK (mcp==2.3.0, .ci/setup) drives `profile-train mcp` over stdio.

Both protocol eras (mode="legacy": the initialize handshake at 2025-11-25; mode="2026-07-28": the stateless
revision) run the same session: list the tools, analyze a shared trace and compare with the CLI's own
report.json, query a section, explain, the rules tools, diff, resources, roots, every error case; then, with
--allow-run, a tune cancelled mid-way (its processes must be gone and the server must keep serving).

Usage: python mcp_sdk_e2e.py BINARY TRACES_DIR SCRATCH_DIR     (exit 77: the shared traces are absent)
"""
import asyncio
import json
import os
import shutil
import subprocess
import sys
import time
import uuid

import anyio
import mcp
from mcp import Client, StdioServerParameters
from mcp import types

BINARY, TRACES, SCRATCH = (os.path.abspath(a) for a in sys.argv[1:4])
ALEXNET = os.path.join(TRACES, "hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz")
CONTROL = os.path.join(TRACES, "hta/trace_diff/control/control.json.gz")
TEST = os.path.join(TRACES, "hta/trace_diff/test/test.json.gz")
RANKS = [os.path.join(TRACES, "hta/timeline_analysis/sampled_rank-0.json.gz"),
         os.path.join(TRACES, "hta/trace_filter/sampled_rank-1.json.gz")]

failures = []


def check(cond, what):
    if cond:
        print(f"  ok   {what}")
    else:
        print(f"  FAIL {what}")
        failures.append(what)


def text_of(result):
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


def server(args, cwd):
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/tmp"),
           "TMPDIR": os.path.join(SCRATCH, "tmp")}
    os.makedirs(env["TMPDIR"], exist_ok=True)
    return StdioServerParameters(command=BINARY, args=["mcp", *args], env=env, cwd=cwd)


def cli_report(trace, out):
    shutil.rmtree(out, ignore_errors=True)
    subprocess.run([BINARY, "analyze", trace, "--out", out, "--quiet"], check=True)
    with open(os.path.join(out, "report.json")) as f:
        return json.load(f)


async def session(mode, cli_alexnet):
    print(f"== mode={mode}")
    work = os.path.join(SCRATCH, f"work-{mode}")
    shutil.rmtree(work, ignore_errors=True)
    # The traces folder is the root (--root): paths outside it are refused.
    async with Client(server(["--root", TRACES, "--root", SCRATCH, "--work-dir", work], cwd=SCRATCH),
                      mode=mode, read_timeout_seconds=300) as client:
        modern = mode != "legacy"
        check(client.protocol_version == ("2026-07-28" if modern else "2025-11-25"),
              f"negotiated {client.protocol_version}")
        if not modern:
            await client.send_ping()
            check(True, "ping answered")
        tools = (await client.list_tools()).tools
        names = sorted(t.name for t in tools)
        check(names == ["analyze", "diff", "explain", "report_query", "rules_list", "rules_show"],
              f"tools without --allow-run: {names}")
        check(all(t.output_schema for t in tools), "every tool has an outputSchema")

        # analyze a shared trace: the same verdict and plan as the CLI's report.json.
        progress = []

        async def on_progress(p, total, message):
            progress.append((p, message))

        r = await client.call_tool("analyze", {"paths": [ALEXNET], "sections": ["breakdown", "gpu"]},
                                   progress_callback=on_progress)
        check(not r.is_error, "analyze succeeded")
        s = r.structured_content
        rep = s["reports"][0]
        check(rep["verdict"]["bottleneck"] == cli_alexnet["verdict"]["bottleneck"]
              and rep["verdict"]["summary"] == cli_alexnet["verdict"]["summary"], "verdict = the CLI's")
        check(rep["plan"] == cli_alexnet["plan"], "plan = the CLI's")
        check(rep["sections"]["breakdown"] == cli_alexnet["breakdown"] and rep["sections"]["gpu"] == cli_alexnet["gpu"],
              "sections breakdown and gpu = the CLI's")
        with open(rep["report_json"]) as f:
            written = json.load(f)
        for k in ("tool", "source"):
            written.pop(k, None)
        expected = dict(cli_alexnet)
        for k in ("tool", "source"):
            expected.pop(k, None)
        check(written == expected, "the report.json written through MCP = the CLI's (but tool/source)")
        check(rep["report_json"].startswith(work), "written in the work folder")
        check(any("started" in (m or "") for _, m in progress), f"progress notifications ({len(progress)})")
        check("verdict" in text_of(r), "text content leads with the verdict")
        report_path = rep["report_json"]

        # report_query: a section, a pointer, a bound.
        q = await client.call_tool("report_query", {"report": report_path, "section": "verdict"})
        check(not q.is_error and q.structured_content["value"] == cli_alexnet["verdict"], "report_query section")
        q = await client.call_tool("report_query", {"report": report_path, "pointer": "/plan/combined_speedup_max"})
        check(q.structured_content["value"] == cli_alexnet["plan"]["combined_speedup_max"], "report_query pointer")
        q = await client.call_tool("report_query", {"report": report_path, "section": "gpu", "max_bytes": 200})
        sc = q.structured_content
        check(sc["truncated"] and "value" not in sc and sc["children"] and sc["bytes"] > 200,
              "report_query over max_bytes lists the children instead")
        q = await client.call_tool("report_query", {"report": report_path, "pointer": "/no/such"})
        check(q.is_error and "nothing at pointer" in text_of(q), "report_query missing pointer: tool error")

        # resources: the reports written in the session.
        res = (await client.list_resources()).resources
        uris = [str(x.uri) for x in res]
        check(any(u.endswith("/report.json") for u in uris) and any(u.endswith("/report.html") for u in uris),
              f"resources list the session's reports ({len(uris)})")
        json_uri = next(u for u in uris if u.endswith("/report.json"))
        contents = (await client.read_resource(json_uri)).contents
        check(json.loads(contents[0].text)["verdict"] == cli_alexnet["verdict"], "resources/read returns report.json")

        # explain, rules
        fired = cli_alexnet["recommendations"][0]["id"]
        e = await client.call_tool("explain", {"rule": fired, "report": report_path})
        check(not e.is_error and e.structured_content["fired"] and e.structured_content["recommendation"]["id"] == fired
              and fired in e.structured_content["explanation"], f"explain {fired}: fired, with its entry")
        rl = await client.call_tool("rules_list", {})
        ids = [x["id"] for x in rl.structured_content["rules"]]
        listed = subprocess.run([BINARY, "rules", "list", "--json"], capture_output=True, text=True, check=True)
        check(ids == [x["id"] for x in json.loads(listed.stdout)], f"rules_list = the CLI's ({len(ids)} rules)")
        rs = await client.call_tool("rules_show", {"id": fired})
        check(rs.structured_content["rule"]["id"] == fired, "rules_show")
        rs = await client.call_tool("rules_show", {"id": "no-such-rule"})
        check(rs.is_error and "no-such-rule" in text_of(rs), "rules_show unknown id: tool error naming it")

        # diff of two traces' reports
        a = await client.call_tool("analyze", {"paths": [CONTROL]})
        b = await client.call_tool("analyze", {"paths": [TEST]})
        d = await client.call_tool("diff", {"a": a.structured_content["reports"][0]["report_json"],
                                            "b": b.structured_content["reports"][0]["report_json"]})
        check(not d.is_error and "step_time" in d.structured_content["diff"], "diff returns diff.json")

        # several rank files: one report per rank and job.json
        j = await client.call_tool("analyze", {"paths": RANKS})
        check(not j.is_error and len(j.structured_content["reports"]) == 2 and "job_json" in j.structured_content,
              "two rank files: two reports and job.json")

        # errors: every one a clear error, and the server keeps serving
        r = await client.call_tool("analyze", {"paths": [os.path.join(TRACES, "no-such-file.json")]})
        check(r.is_error and "no-such-file" in text_of(r), "missing file: tool error naming it")
        r = await client.call_tool("analyze", {"paths": ["/etc/passwd"]})
        check(r.is_error and "outside the allowed roots" in text_of(r), "path outside the roots: refused")
        r = await client.call_tool("analyze", {"paths": "not-a-list"})
        check(r.is_error and "'paths' must be an array of strings" in text_of(r), "wrong argument type: tool error")
        r = await client.call_tool("analyze", {"paths": [ALEXNET], "colour": True})
        check(r.is_error and "unknown argument 'colour'" in text_of(r), "unknown argument: tool error")
        r = await client.call_tool("analyze", {})
        check(r.is_error and "missing required argument 'paths'" in text_of(r), "missing argument: tool error")
        bad = os.path.join(SCRATCH, "truncated.json")
        with open(bad, "w") as f:
            f.write('{"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur"')
        r = await client.call_tool("analyze", {"paths": [bad]})
        check(r.is_error and "truncated.json" in text_of(r), f"truncated trace: tool error ({text_of(r)[:120]!r})")
        r = await client.call_tool("run", {"command": ["true"]})
        check(r.is_error and "--allow-run" in text_of(r), "run without --allow-run: refused, saying how to enable it")
        try:
            await client.call_tool("no_such_tool", {})
            check(False, "unknown tool raises")
        except mcp.MCPError as err:
            check(err.error.code == -32602, f"unknown tool: JSON-RPC error {err.error.code}")
        try:
            await client.read_resource("file:///etc/passwd")
            check(False, "resource outside the roots raises")
        except mcp.MCPError as err:
            check("neither a report of this session nor inside the roots" in err.error.message,
                  "resources/read outside the roots: refused")
        r = await client.call_tool("rules_list", {})
        check(not r.is_error, "still serving after the errors")


async def roots_session(mode):
    """The client declares roots: only they count (not --root), in either era (roots/list or input_required)."""
    print(f"== roots, mode={mode}")
    asked = []

    async def list_roots(ctx):
        asked.append(1)
        return types.ListRootsResult(roots=[types.Root(uri=f"file://{os.path.dirname(ALEXNET)}")])

    async with Client(server(["--root", TRACES, "--work-dir", os.path.join(SCRATCH, f"work-roots-{mode}")], SCRATCH),
                      mode=mode, list_roots_callback=list_roots, read_timeout_seconds=300) as client:
        r = await client.call_tool("analyze", {"paths": [ALEXNET]})
        check(not r.is_error and asked, f"inside the client's root: analyzed (roots asked {len(asked)}x)")
        r = await client.call_tool("analyze", {"paths": [CONTROL]})
        check(r.is_error and "outside the allowed roots" in text_of(r), "under --root but outside the client's roots: refused")


async def cancelled_tune():
    print("== --allow-run: run, and a cancelled tune")
    marker = f"mcp-cancel-{uuid.uuid4().hex}"
    script = os.path.join(SCRATCH, marker + ".py")  # the marker in the command line, for pgrep -f
    with open(script, "w") as f:
        f.write(f"# {marker}\nimport time\nfor i in range(600):\n    time.sleep(0.5)\n")
    async with Client(server(["--allow-run", "--root", SCRATCH, "--work-dir", os.path.join(SCRATCH, "work-tune")], SCRATCH),
                      mode="auto", read_timeout_seconds=300) as client:
        names = sorted(t.name for t in (await client.list_tools()).tools)
        check("run" in names and "tune" in names, "with --allow-run: run and tune listed")
        train = os.path.join(SCRATCH, "tiny_train.py")
        with open(train, "w") as f:
            f.write("import torch\nm = torch.nn.Linear(64, 64)\nopt = torch.optim.SGD(m.parameters(), 0.1)\n"
                    "for i in range(40):\n    loss = m(torch.randn(256, 64)).pow(2).mean()\n"
                    "    opt.zero_grad()\n    loss.backward()\n    opt.step()\n")
        r = await client.call_tool("run", {"command": [sys.executable, train], "kill_after": 240})
        rep = (r.structured_content or {}).get("reports", [{}])[0]
        check(not r.is_error and rep.get("verdict", {}).get("bottleneck") == "cpu_only"
              and os.path.exists(rep.get("report_json", "")), f"run of a real PyTorch loop: {rep.get('verdict')}")
        r = await client.call_tool("run", {"command": [sys.executable, train], "out": "/etc/profile-train-out"})
        check(r.is_error and "outside the allowed roots" in text_of(r), "run with an output folder outside the roots: refused")
        seen = []

        async def on_progress(p, total, message):
            seen.append(message)

        started = time.monotonic()
        with anyio.move_on_after(6):
            await client.call_tool("tune", {"command": [sys.executable, script], "knobs": ["num_workers=0,1"],
                                            "trial_timeout": 120}, progress_callback=on_progress)
            check(False, "the tune should still be running when cancelled")
        running = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout.split()
        check(bool(running), f"the tune's command was running at the cancel ({len(running)} processes)")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if not subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout.split():
                break
            await anyio.sleep(0.2)
        left = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout.split()
        check(not left, f"cancelled: every process of the tune gone {time.monotonic() - started:.1f} s after the call")
        check(len(seen) >= 1, f"progress while the tune ran ({len(seen)} notifications)")
        r = await client.call_tool("rules_list", {})
        check(not r.is_error, "still serving after the cancel")


async def main():
    if len(sys.argv) > 4 and sys.argv[4] == "--only-tune":
        os.makedirs(SCRATCH, exist_ok=True)
        await cancelled_tune()
        return 1 if failures else 0
    if not os.path.exists(ALEXNET):
        print("shared traces absent: skipped")
        return 77
    os.makedirs(SCRATCH, exist_ok=True)
    cli_alexnet = cli_report(ALEXNET, os.path.join(SCRATCH, "cli-alexnet"))
    for mode in ("legacy", "2026-07-28"):
        await session(mode, cli_alexnet)
    for mode in ("legacy", "2026-07-28"):
        await roots_session(mode)
    await cancelled_tune()
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
