"""Per-module NVTX ranges for the profile-train shim (PROFILE_TRAIN_MODULE_RANGES=DEPTH[,backward]).

Forward: "nn.Module: <qualified name>" around each submodule's forward, from forward pre/post hooks.

Backward ("backward" flag): "nn.Module backward: <qualified name>", without full backward hooks (those wrap
every module's inputs and outputs in extra autograd nodes and warn). The forward post-hook notes, on the
autograd nodes that produced the module's outputs, that the module's backward starts there, and on the nodes
that produced its inputs that it ends there; one Node pre-hook per node (grad_fn.register_prehook) acts on
those notes when the autograd engine is about to run the node, on the engine's thread that runs it (the caller
for CPU tensors, the device's thread for CUDA ones). So a module's backward range runs from the moment the
gradient of its output is ready to the moment the gradient of its input is (which, with a residual connection,
includes the skip path's share). A module whose input needs no gradient (the first layer) ends where the
backward pass ends: a final callback of the engine's graph task (queue_callback) closes what the task left open
on its thread. Ranges are a per-thread stack, nested as the modules are (an enclosing module's range stays
open over its children's), so every push is popped on the thread that pushed it; a range a graph task left
open on another thread (the task ended there) is closed by that thread's next hook and counted
(`facts.capture.module_ranges.backward_closed_late`).

Cost (bench/shim/bench_module_ranges.py, bench/results/shim-module-ranges-2026-12-01.md, 43 modules of a
residual MLP on a loaded 2-vCPU machine): the backward ranges add about 73 us of host CPU per module per step
(x1.15 the step without ranges; mostly the one register_prehook per output node in forward), no-op full backward
hooks on the same modules 234 us (x1.78): a third of their cost, and no extra autograd nodes or warnings. Any
failure is noted in the facts (shim_errors) and turns the backward ranges off, closing what this thread holds; the
model is left as it was.
"""

import threading

FORWARD_PREFIX = "nn.Module: "
BACKWARD_PREFIX = "nn.Module backward: "

_MAX_PENDING_NODES = 16384  # nodes noted in one forward pass before the table is reset (modules run outside it)


def _grad_nodes(value, out, budget=64):
    """Appends the autograd nodes (grad_fn) of the tensors in value: a tensor, or a tuple / list / dict of them
    (one level of nesting further, e.g. a Hugging Face ModelOutput holding a tuple of hidden states)."""
    fn = getattr(value, "grad_fn", None)
    if fn is not None:  # the common case, one tensor: no walk
        if all(fn is not o for o in out):
            out.append(fn)
        return out
    if not isinstance(value, (tuple, list, dict)):
        return out
    stack = [(value, 0)]
    while stack and budget > 0:
        v, level = stack.pop()
        budget -= 1
        if isinstance(v, (tuple, list)):
            items = v
        elif isinstance(v, dict):
            items = v.values()
        else:
            fn = getattr(v, "grad_fn", None)
            if fn is not None and all(fn is not o for o in out):
                out.append(fn)
            continue
        if level < 2:
            stack.extend((x, level + 1) for x in items)
    return out


class _NodeNotes:
    """What to do when one autograd node is about to run: modules whose backward ends there (their input's
    gradient is complete) and modules whose backward starts there (their output's gradient arrived)."""

    __slots__ = ("ends", "starts")

    def __init__(self):
        self.ends = []    # qualified names
        self.starts = []  # (depth, qualified name)


class BackwardRanges:
    """Backward ranges of the modules below the model. Thread-safe under the GIL: a thread only changes its own
    stack; the hooks run on the autograd engine's threads while the training thread waits in backward()."""

    def __init__(self, torch, nvtx, is_recording, note_error):
        self.torch = torch
        self.nvtx = nvtx
        self.is_recording = is_recording  # () -> bool: the capture window is open and this is not a worker
        self.note_error = note_error
        self.enabled = True
        self.engine = torch.autograd.Variable._execution_engine
        self.task_id = torch._C._current_graph_task_id
        self.pending = {}        # id(node) -> (node, _NodeNotes), for the nodes of the current forward pass
        self.stacks = {}         # thread ident -> [[qualified name, graph task id], ...], innermost last
        self.live_tasks = set()  # graph tasks whose final callback has not run yet
        self.ranges = 0          # ranges pushed
        self.closed_late = 0

    # ---- forward side: note the nodes ---------------------------------------------------------------------
    def note_forward(self, depth, qual, args, kwargs, output):
        if not self.enabled or not self.torch.is_grad_enabled():
            return
        try:
            outs = _grad_nodes(output, [])
            if not outs:
                return
            ins = _grad_nodes(args, [])
            if kwargs:
                _grad_nodes(kwargs, ins)
            if len(self.pending) > _MAX_PENDING_NODES:
                self.pending.clear()
            for n in outs:
                # A node that also produced an input (an identity, an in-place op): no backward of its own.
                if all(n is not i for i in ins):
                    self.notes_of(n).starts.append((depth, qual))
            for n in ins:
                if all(n is not o for o in outs):
                    self.notes_of(n).ends.append(qual)
        except Exception as e:
            self.fail(e)

    def notes_of(self, node):
        entry = self.pending.get(id(node))
        if entry is not None and entry[0] is node:
            return entry[1]
        notes = _NodeNotes()
        node.register_prehook(self.hook(notes))
        self.pending[id(node)] = (node, notes)
        return notes

    def forward_done(self):
        """The model's forward returned: its nodes carry their hooks, the table (which keeps them alive) goes."""
        self.pending.clear()

    # ---- backward side: act on the notes ------------------------------------------------------------------
    def hook(self, notes):
        def prehook(grad_outputs):
            try:
                self.at_node(notes)
            except Exception as e:
                self.fail(e)
            return None
        return prehook

    def at_node(self, notes):
        stack = self.stacks.setdefault(threading.get_ident(), [])
        while stack and stack[-1][1] not in self.live_tasks:  # left open by a task that ended on another thread
            self.pop(stack)
            self.closed_late += 1
        if not self.enabled:
            return
        task = self.task_id()
        if task < 0:
            return
        for qual in notes.ends:
            for k in range(len(stack) - 1, -1, -1):
                if stack[k][1] != task:
                    break
                if stack[k][0] == qual:
                    while len(stack) > k:
                        self.pop(stack)
                    break
        if not notes.starts or not self.is_recording():
            return
        if task not in self.live_tasks:
            self.live_tasks.add(task)
            self.engine.queue_callback(lambda: self.task_done(task))
        for _, qual in sorted(notes.starts):  # enclosing modules first
            while stack and stack[-1][1] == task and not qual.startswith(stack[-1][0] + "."):
                self.pop(stack)
            self.nvtx.push(BACKWARD_PREFIX + qual)
            stack.append([qual, task])
            self.ranges += 1

    def task_done(self, task):
        """The graph task's final callback, on the engine thread that finished it: close what it left open here."""
        try:
            self.live_tasks.discard(task)
            stack = self.stacks.get(threading.get_ident())
            while stack and stack[-1][1] == task:
                self.pop(stack)
        except Exception as e:
            self.fail(e)

    def backward_returned(self):
        """backward() returned on the training thread (or raised: a failed task runs no final callback): every task
        is over; what is still open on this thread closes now, elsewhere at that thread's next hook."""
        try:
            self.live_tasks.clear()
            stack = self.stacks.get(threading.get_ident())
            while stack:
                self.pop(stack)
        except Exception as e:
            self.fail(e)

    def pop(self, stack):
        stack.pop()
        self.nvtx.pop()

    def fail(self, e):
        if self.enabled:
            self.enabled = False
            self.note_error("module_backward_ranges", e)
        self.pending.clear()
        stack = self.stacks.get(threading.get_ident())
        try:
            while stack:
                self.pop(stack)
        except Exception:
            pass

    def facts(self):
        return {"backward": self.enabled, "backward_ranges": self.ranges, "backward_closed_late": self.closed_late}


def install(model, depth, backward, torch, nvtx, is_recording, note_error):
    """Hooks a forward range (and with backward=True, backward ranges) on each submodule of model down to depth.
    Returns (the number of modules, the BackwardRanges or None). Raises on failure after removing every hook
    it added, so the model is left as it was."""
    bw = BackwardRanges(torch, nvtx, is_recording, note_error) if backward else None
    handles = []

    def push(name):
        def hook(*_):
            if is_recording():
                nvtx.push(name)
        return hook

    def pop(*_):
        if is_recording():
            nvtx.pop()

    def pop_and_note(depth_, qual):
        def hook(module, args, kwargs, output):
            if is_recording():
                nvtx.pop()
                bw.note_forward(depth_, qual, args, kwargs, output)
        return hook

    try:
        for qual, m in model.named_modules():
            d = qual.count(".") + 1
            if not qual or d > depth:
                continue
            handles.append(m.register_forward_pre_hook(push(FORWARD_PREFIX + qual)))
            # always_call: the range also ends when the forward raises (a non-reentrant checkpoint's recompute
            # stops that way once it has what backward needs; the output is then None).
            if bw is None:
                handles.append(m.register_forward_hook(pop, always_call=True))
            else:
                handles.append(m.register_forward_hook(pop_and_note(d, qual), with_kwargs=True, always_call=True))
    except BaseException:
        for h in handles:
            try:
                h.remove()
            except Exception:
                pass
        raise
    return len(handles) // 2, bw
