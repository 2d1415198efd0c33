"""profile-train shim, torch.compile's facts (facts.compile): what dynamo itself counted, read from the installed
torch, with no change to the user's code. Loaded by profile_train_shim.py by path (as its other siblings).

Sources (torch 2.11; each read defensively, absent in older versions):
  - graph breaks with their user file:line: dynamo's own "graph_breaks" log records (the artifact loggers
    torch._dynamo.symbolic_convert.__graph_breaks / torch._dynamo.convert_frame.__graph_breaks, what
    TORCH_LOGS=graph_breaks prints), taken by a handler of ours that does not propagate: nothing is printed
    unless the user asked for it;
  - graph breaks counted and unique graphs: torch._dynamo.utils.counters ("graph_break", "stats");
  - recompiles and their guard failures: torch._dynamo.utils.get_compilation_metrics() (compile ids F/C with
    C > 0, recompile_reason);
  - compile time: torch._dynamo.callback's on_compile_start/on_compile_end (dynamo frames, lazy backward
    compiles, CUDA-graph recording), each also an NVTX range "torch.compile <id> (dynamo_timed)" so the capture
    places it among the steps.
Nothing here runs until the program calls torch.compile (torch.compile is wrapped; nn.Module.compile calls it)."""

import logging
import os
import re
import sys
import threading
import time

_BREAK_LOGGERS = ("torch._dynamo.symbolic_convert.__graph_breaks", "torch._dynamo.convert_frame.__graph_breaks")
_WHERE = re.compile(r"in user code at (.+?):(\d+)\s*$", re.M)
_FILE_LINE = re.compile(r'File "([^"]+)", line (\d+)')
_EXPLAINED = re.compile(r"Explanation:[^`\n]*`([^`\n]{1,80})`")
_HERE = os.path.dirname(os.path.abspath(__file__))  # the shim's own frames are not the user's code
_MAX_KEPT = 50     # distinct breaks / recompile reasons kept
_MAX_TEXT = 300    # characters of a reason


def _short_path(path):
    try:
        rel = os.path.relpath(path)
        return rel if not rel.startswith("..") else path
    except ValueError:
        return path


def parse_break(msg):
    """(where, reason) of one dynamo graph-break log message: where is "file:line" of the user code (None when
    the message has none), reason the break's kind (its first line past dynamo's generic preamble)."""
    where = None
    m = _WHERE.search(msg)
    if m:
        where = "%s:%s" % (_short_path(m.group(1)), m.group(2))
    else:
        frames = _FILE_LINE.findall(msg)
        if frames:
            where = "%s:%s" % (_short_path(frames[-1][0]), frames[-1][1])
    reason = None
    i = msg.find("Graph Break Reason:")
    if i >= 0:
        for line in msg[i + len("Graph Break Reason:"):].splitlines():
            line = line.strip()
            if not line or line.startswith("Encountered graph break when attempting"):
                continue
            reason = line
            break
    elif "results in a skip" in msg:
        reason = "torch.compile cannot resume after this graph break: the whole frame runs eagerly"
    if reason is None:
        lines = [l.strip() for l in msg.splitlines() if l.strip()]
        reason = lines[0] if lines else "graph break"
    # What it failed on, from dynamo's explanation: "... builtin operator `print` ..." -> (print).
    m = _EXPLAINED.search(msg)
    if m and m.group(1) not in reason:
        reason = "%s (%s)" % (reason, m.group(1))
    return where, reason[:_MAX_TEXT]


class _BreakHandler(logging.Handler):
    def __init__(self, watch):
        logging.Handler.__init__(self, logging.DEBUG)
        self.watch = watch

    def emit(self, record):
        try:
            self.watch.note_break(*parse_break(record.getMessage()))
        except Exception:
            pass  # never disturb dynamo's logging


class CompileWatch:
    """What torch.compile did in this process. `nvtx` the shim's ranges, `step_of()` the step index now."""

    def __init__(self, nvtx, step_of):
        self.nvtx = nvtx
        self.step_of = step_of
        self.lock = threading.Lock()
        self.breaks = {}       # (where, reason) -> times dynamo met it while compiling
        self.calls = []        # torch.compile calls: their mode / backend / fullgraph / dynamic
        self.compile_s = 0.0   # compile callbacks, start to end
        self.compiles = 0
        self.in_steps = {}     # step index at the compile's start -> seconds
        self.tls = threading.local()
        self.hooked = False

    # ---- installation -----------------------------------------------------------------------------------
    def wrap_compile(self, torch):
        orig = getattr(torch, "compile", None)
        if orig is None or getattr(orig, "_profile_train", False):
            return
        watch = self

        def compile(*args, **kwargs):
            try:
                watch.note_call(kwargs)
                watch.hook(torch)
            except Exception:
                pass
            return orig(*args, **kwargs)

        compile._profile_train = True
        compile.__doc__ = orig.__doc__
        compile.__wrapped__ = orig
        torch.compile = compile

    def hook(self, torch):
        with self.lock:
            if self.hooked:
                return
            self.hooked = True
        handler = _BreakHandler(self)
        for name in _BREAK_LOGGERS:
            lg = logging.getLogger(name)
            if not lg.isEnabledFor(logging.DEBUG):
                # Off (the default): let its debug records through to our handler only; torch's own
                # configuration (TORCH_LOGS, set_logs) turns propagation back on when the user asks for them.
                lg.setLevel(logging.DEBUG)
                lg.propagate = False
            lg.addHandler(handler)
        try:
            import torch._dynamo.callback as cb  # noqa: the public callbacks module (torch >= 2.4)
            cb.on_compile_start(self.compile_start)
            cb.on_compile_end(self.compile_end)
        except Exception:
            pass

    # ---- events -----------------------------------------------------------------------------------------
    def note_call(self, kwargs):
        call = {k: kwargs.get(k) for k in ("mode", "backend", "fullgraph", "dynamic") if k in kwargs}
        for k, v in list(call.items()):
            if not isinstance(v, (str, bool, int, type(None))):
                call[k] = getattr(v, "__name__", type(v).__name__)
        with self.lock:
            if len(self.calls) < 20:
                self.calls.append(call)

    def note_break(self, where, reason):
        with self.lock:
            key = (where, reason)
            if key in self.breaks or len(self.breaks) < _MAX_KEPT:
                self.breaks[key] = self.breaks.get(key, 0) + 1

    def compile_start(self, *args):
        self.tls.start = time.monotonic()
        self.tls.step = self.step_of()
        cid = getattr(args[0], "compile_id", "") if args else ""
        try:
            self.nvtx.push("torch.compile %s (dynamo_timed)" % cid if cid else "torch.compile (dynamo_timed)")
            self.tls.pushed = True
        except Exception:
            self.tls.pushed = False

    def compile_end(self, *args):
        start = getattr(self.tls, "start", None)
        if start is None:
            return
        self.tls.start = None
        if getattr(self.tls, "pushed", False):
            try:
                self.nvtx.pop()
            except Exception:
                pass
        secs = time.monotonic() - start
        with self.lock:
            self.compile_s += secs
            self.compiles += 1
            step = self.tls.step
            self.in_steps[step] = self.in_steps.get(step, 0.0) + secs

    # ---- facts ------------------------------------------------------------------------------------------
    def facts(self):
        """facts.compile, or None when the program never called torch.compile."""
        if not self.hooked:
            return None
        out = {"calls": list(self.calls)}
        utils = sys.modules.get("torch._dynamo.utils")
        if utils is not None:
            counters = getattr(utils, "counters", {})
            stats = dict(counters.get("stats", {}))
            if "unique_graphs" in stats:
                out["unique_graphs"] = int(stats["unique_graphs"])
            gb = counters.get("graph_break", {})
            out["graph_breaks"] = int(sum(gb.values()))
            out["frames"] = int(dict(counters.get("frames", {})).get("total", 0))
            metrics = getattr(utils, "get_compilation_metrics", None)
            if metrics is not None:
                recompiles, reasons = 0, {}
                for m in metrics():
                    cid = str(getattr(m, "compile_id", "") or "")
                    parts = cid.split("/")
                    if len(parts) < 2 or not parts[-1].split("_")[0].isdigit() or int(parts[-1].split("_")[0]) == 0:
                        continue
                    recompiles += 1
                    text = (getattr(m, "recompile_reason", None) or "guard failed").strip().splitlines()[0]
                    text = " ".join(text.split())[:_MAX_TEXT]
                    where = None
                    # The compiled model's entry frame is nn.Module.__call__, which the shim wraps: not a line
                    # of the user's.
                    filename = getattr(m, "co_filename", None)
                    if filename and os.path.dirname(os.path.abspath(filename)) != _HERE:
                        where = "%s:%s (%s)" % (_short_path(m.co_filename), m.co_firstlineno, m.co_name)
                    if (where, text) in reasons or len(reasons) < _MAX_KEPT:
                        reasons[(where, text)] = reasons.get((where, text), 0) + 1
                out["recompiles"] = recompiles
                out["recompile_reasons"] = [{"where": w, "reason": r, "count": c}
                                            for (w, r), c in sorted(reasons.items(), key=lambda x: -x[1])]
        with self.lock:
            out["breaks"] = [{"where": w, "reason": r, "count": c}
                             for (w, r), c in sorted(self.breaks.items(), key=lambda x: (-x[1], str(x[0])))]
            if self.compiles:
                out["compile_time_s"] = round(self.compile_s, 6)
                out["compiles"] = self.compiles
                out["compile_s_by_step"] = {str(k): round(v, 6) for k, v in sorted(self.in_steps.items())}
        if not out["breaks"] and out.get("graph_breaks"):
            out["breaks_note"] = "dynamo counted breaks but logged none (its graph_breaks log was reconfigured)"
        return out
