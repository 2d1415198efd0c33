"""profile-train shim, the collectives of the process (facts.collectives): every torch.distributed collective the
training process issues while the shim is active, with its kind, process group, sequence number, sizes and times,
on gloo (CPU) and NCCL (GPU), with no change to the user's code. Loaded by profile_train_shim.py by path (as its
other siblings) and installed from profile_train_patches.install(); PROFILE_TRAIN_COLLECTIVES=0 turns it off
(nothing is patched then).

Interception points (torch 2.11; each one checked at install, left alone when it is not there):
  1. torch.distributed's collective functions (all_reduce, all_gather_into_tensor, _all_gather_base, all_gather,
     reduce_scatter_tensor, _reduce_scatter_base, reduce_scatter, all_to_all_single, all_to_all, broadcast,
     reduce, send, recv, isend, irecv, barrier, gather, scatter), replaced both in torch.distributed and in
     torch.distributed.distributed_c10d (where torch's own code looks them up: send calls isend there, the
     object collectives call all_gather / broadcast there, FSDP2's _fsdp_collectives.py and FSDP1 call
     dist.all_gather_into_tensor / dist.reduce_scatter_tensor / dist.all_reduce through the module, so all of
     them are seen). The wrapper keeps the signature (__wrapped__: inspect.signature, and dynamo's rewrite of
     these calls into functional collectives, see through it), the return value and async_op's semantics; it
     times the call and, for async_op=True on the CPU, completion through the work's future. A function bound
     before the shim installed (`from torch.distributed import all_reduce` run before `import torch` finished)
     keeps the original and is missed: the shim installs as `import torch` ends, before any user code can
     import from torch.distributed, and torch itself binds none of them at import (checked for 2.11).
     Not seen: the functional collectives (torch.distributed._functional_collectives, what DTensor / tensor
     parallel and torch.compile'd code use: ops of the _c10d_functional library, dispatched in C++), the
     collectives torch issues from C++ (DDP's parameter check at construction, ProcessGroup methods called
     directly), and the deprecated *_coalesced functions and _coalescing_manager's fused collective (the calls
     inside it are not issued one by one: not recorded, counted in the notes).
  2. DDP: the reducer all-reduces its gradient buckets in C++, past (1). DistributedDataParallel.__init__ is
     patched to register a comm hook of ours that does what the reducer's built-in path does (each gradient times
     1/world size, the reciprocal the reducer multiplies by while copying into the bucket, then an async
     all_reduce of the bucket, the future's tensor) and records one instance per bucket (op "ddp_bucket").
     Bit for bit the same gradients: the reducer multiplies by the reciprocal except where a gradient already is
     a view of its bucket (gradient_as_bucket_view=True with gradients kept between steps), where it divides;
     the two agree exactly when the world size is a power of two, so with gradient_as_bucket_view and another
     world size the hook is not installed (a note says so). Under Join with divide_by_initial_world_size=False
     the reducer divides by the ranks not yet joined, which a hook cannot see: there the gradients of the steps
     after a rank joined differ (as with torch's own allreduce_hook).
     DDP takes one comm hook per model: DistributedDataParallel.register_comm_hook and
     _register_builtin_comm_hook are intercepted so that a hook the user registers later becomes the one ours
     calls (DDP's own checks and logging still run; only the final registration into the reducer is taken
     over); a builtin (ALLREDUCE, FP16_COMPRESS) becomes its Python equivalent in default_hooks (allreduce_hook,
     fp16_compress_hook: the same arithmetic). Its collectives are recorded by (1) with "ddp_hook": the hook's
     name. A second registration fails as it does without the shim. Ours is not installed (a note says why) when
     that cannot be done safely: a hook DDP registered itself (mixed precision, optimizer in backward), the
     Python reducer of compiled autograd, sparse gradients, no reducer, a builtin with no Python equivalent.
  3. torch.distributed._broadcast_coalesced (DDP's parameter and buffer broadcasts: at construction, and before
     every forward for a model with buffers, e.g. BatchNorm): one instance per broadcast it issues, split as it
     splits them (torch.distributed._compute_bucket_assignment_by_size: by dtype and device, up to its size).

facts.collectives = {"hooks": [...], "dropped": N, "instances": [...], "complete": bool, "notes": [...]}:
  - hooks: the interception points installed ('torch.distributed' when (1) and (3) are, "ddp" once a model got
    our hook);
  - instances (at most _MAX_INSTANCES, the rest counted in dropped), in issue order:
    kind       all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, reduce, send, recv, barrier, gather,
               scatter
    op         the torch.distributed function, or "ddp_bucket" (our DDP hook)
    pg, pg_desc, group_size   the process group's name ("0" for the default group), description, size
    seq        the group's collective counter read right after issuing (ProcessGroup._get_sequence_number_for_group:
               the same on every rank for the same collective); of the backend that ran it when the group has
               one per device; null for send / recv (NCCL counts them apart) and when the counter did not move
    dtype      c10's ScalarType name (Float, BFloat16, Half, Double, Long, Int, Byte, Bool, ...); a complex tensor
               counts as its real pairs, as c10d sends it
    in_nelems, out_nelems   elements of this rank's input and output buffers (all_gather: out = n x in;
               reduce_scatter: in = n x out), what Kineto calls In / Out msg nelems
    bytes      nccl-tests' S: all_gather the output bytes, gather n x the input, scatter n x the output, every
               other kind the input bytes
    device     the tensors' device type ("cpu", "cuda"); a barrier's from its backend
    async      async_op (isend / irecv and DDP buckets: true)
    call_ns, return_ns   time.monotonic_ns() (CLOCK_MONOTONIC, the capture's clock) as the call started / returned
    end_ns     completion: a synchronous call on the CPU (and a synchronous barrier anywhere: it blocks the host)
               returned at it; an async one on the CPU when its work's future completed (not known for gloo's
               isend / irecv: their work has no future); on a GPU null (NCCL's work completes on its stream: the
               kernels' own times come from the GPU trace, launched inside [call_ns, return_ns])
    step       the shim's step index at the call (steps opened so far: ProfilerStep#k is step k + 1; 0 before
               the first step), as facts.compile's compile_s_by_step
    ddp_hook   only on collectives issued inside a user's DDP comm hook: the hook's name
  - complete: false in the files written while the capture window is open (they carry at most the first
    _LIVE_INSTANCES instances: their JSON is rebuilt at every facts write), true in the one written when it closed
    or at exit, which has all of them.
Only while the shim is active (the capture window) and in the training process: not in DataLoader workers or any
other forked child, not on the shim's own facts thread. A failure here is noted in the facts (shim_errors) and
leaves the collective to torch, never raised into the user's program.

Cost: only per collective, no dispatch mode: about 6 us of Python per recorded call timed alone (argument lookup,
two reads of the group's counter, two clock reads, one list; an async CPU call also a callback on its future),
25-45 us as measured between back-to-back 1-element gloo all_reduces on a loaded 2-vCPU VM; a DDP bucket pays what
any Python comm hook pays (torch's own allreduce_hook costs the same) plus one multiplication pass over the bucket
(the reducer fuses it into its copy). On a small DDP loop with 7 collectives a step the whole run's CPU time was
within the machine's noise of PROFILE_TRAIN_COLLECTIVES=0 (bench/shim/bench_comm_overhead.py,
bench/results/shim-collectives-2026-12-07.md).
"""

import functools
import importlib
import inspect
import threading
import time
import weakref

_MAX_INSTANCES = 20000  # kept; later ones are counted in "dropped"
_LIVE_INSTANCES = 256  # in the facts written while the window is open (their JSON is rebuilt at each write: ~2 ms)
_MAX_NOTES = 20
_HOOK_FUNCTIONS = 'torch.distributed'  # single quotes: knobs_test takes double-quoted dotted words for override keys
_HOOK_DDP = "ddp"
_DDP_ATTR = "_profile_train_comm"  # our hook's state on a DistributedDataParallel instance

# function -> (kind, argument holding the input tensor(s), argument holding the output tensor(s)); the group and
# async_op arguments are found by name in the function's signature at install.
_FUNCTIONS = {
    "all_reduce": ("all_reduce", "tensor", "tensor"),
    "all_gather_into_tensor": ("all_gather", "input_tensor", "output_tensor"),
    "_all_gather_base": ("all_gather", "input_tensor", "output_tensor"),
    "all_gather": ("all_gather", "tensor", "tensor_list"),
    "reduce_scatter_tensor": ("reduce_scatter", "input", "output"),
    "_reduce_scatter_base": ("reduce_scatter", "input", "output"),
    "reduce_scatter": ("reduce_scatter", "input_list", "output"),
    "all_to_all_single": ("all_to_all", "input", "output"),
    "all_to_all": ("all_to_all", "input_tensor_list", "output_tensor_list"),
    "broadcast": ("broadcast", "tensor", "tensor"),
    "reduce": ("reduce", "tensor", "tensor"),
    "send": ("send", "tensor", "tensor"),
    "recv": ("recv", "tensor", "tensor"),
    "isend": ("send", "tensor", "tensor"),
    "irecv": ("recv", "tensor", "tensor"),
    "barrier": ("barrier", None, None),
    "gather": ("gather", "tensor", "gather_list"),
    "scatter": ("scatter", "scatter_list", "tensor"),
}
_ALWAYS_ASYNC = ("isend", "irecv")  # return their work; send / recv wait
# Inside _coalescing_manager these only append to its list (issued later as one fused collective, not seen).
_COALESCED_BY_PYTHON = ("all_reduce", "all_gather_into_tensor", "_all_gather_base", "reduce_scatter_tensor",
                        "_reduce_scatter_base")
_P2P = ("send", "recv")
# Builtin DDP comm hooks -> their Python equivalent in torch.distributed.algorithms.ddp_comm_hooks.default_hooks.
_BUILTIN_HOOKS = {"ALLREDUCE": "allreduce_hook", "FP16_COMPRESS": "fp16_compress_hook"}
_DEFAULT_HOOKS = "torch.distributed.algorithms.ddp_comm_hooks.default_hooks"
_DDP_MODULE = "torch.nn.parallel.distributed"
_C10D_MODULE = "torch.distributed.distributed_c10d"

# c10's ScalarType names, as Kineto writes them ("dtype" of record_param_comms).
_SCALAR_TYPES = {
    "float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16", "int64": "Long",
    "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool", "complex32": "ComplexHalf",
    "complex64": "ComplexFloat", "complex128": "ComplexDouble", "uint16": "UInt16", "uint32": "UInt32",
    "uint64": "UInt64", "float8_e4m3fn": "Float8_e4m3fn", "float8_e5m2": "Float8_e5m2",
    "float8_e4m3fnuz": "Float8_e4m3fnuz", "float8_e5m2fnuz": "Float8_e5m2fnuz", "float8_e8m0fnu": "Float8_e8m0fnu",
}
_REAL_OF_COMPLEX = {"complex32": "float16", "complex64": "float32", "complex128": "float64"}

# One instance is a list (smaller than a dict; made a dict when the facts are written), fields in this order.
_FIELDS = ("kind", "op", "pg", "pg_desc", "group_size", "seq", "dtype", "in_nelems", "out_nelems", "bytes", "device",
           "async", "call_ns", "return_ns", "end_ns", "step")
_END = _FIELDS.index("end_ns")

_now = time.monotonic_ns


def _timed_call(tls, fn, args, kwargs):
    """fn(*args, **kwargs) -> (result, call_ns, return_ns). While it runs, tls.inside makes torch's own nested calls
    (send -> isend, _all_gather_base -> ...) part of this one."""
    tls.inside = True
    call_ns = _now()
    try:
        result = fn(*args, **kwargs)
    finally:
        tls.inside = False
    return result, call_ns, _now()


def _arg(args, kwargs, index, name, default=None):
    if name in kwargs:
        return kwargs[name]
    if index is not None and index < len(args):
        return args[index]
    return default


class CommWatch:
    """The collectives of this process. `shim` is profile_train_shim.S (active, is_worker, steps_seen, note_error)."""

    def __init__(self, shim, torch):
        self.S = shim
        self.torch = torch
        self.lock = threading.Lock()
        self.tls = threading.local()
        self.instances = []
        self.dropped = 0
        self.coalesced = 0       # calls inside _coalescing_manager, not recorded
        self.hooks = []
        self.notes = []
        self.ddp_models = 0      # models that got our DDP hook
        self.pg_info = weakref.WeakKeyDictionary()  # ProcessGroup -> (name, desc, size, per-device backends, device)
        self.dtype_names = {}
        for name, c10 in _SCALAR_TYPES.items():
            dt = getattr(torch, name, None)
            if dt is not None:
                self.dtype_names[dt] = c10
        self.real_of = {getattr(torch, c): getattr(torch, r) for c, r in _REAL_OF_COMPLEX.items()
                        if getattr(torch, c, None) is not None}
        self.is_compiling = getattr(getattr(torch, "compiler", None), "is_compiling", lambda: False)
        self.c10d = None
        self.orig_all_reduce = None
        self.failed = 0
        self.bc_buckets = {}     # _broadcast_coalesced: (buffer size, tensors' dtype / device / numel) -> buckets

    # ---- state ------------------------------------------------------------------------------------------
    def recording(self):
        S = self.S
        return S.active and not S.is_worker

    def note(self, text):
        with self.lock:
            if text not in self.notes and len(self.notes) < _MAX_NOTES:
                self.notes.append(text)

    def fail(self, where, e):
        """A failure of ours: noted (the first few), the collective itself goes on untouched."""
        self.failed += 1
        if self.failed <= 3:
            try:
                self.S.note_error("collectives " + where, e)
            except Exception:
                pass

    def keep(self, rec):
        with self.lock:
            if len(self.instances) < _MAX_INSTANCES:
                self.instances.append(rec)
            else:
                self.dropped += 1

    # ---- installation -----------------------------------------------------------------------------------
    def install(self):
        torch = self.torch
        dist = getattr(torch, "distributed", None)
        if dist is None or not dist.is_available():
            return False
        c10d = importlib.import_module(_C10D_MODULE)
        self.c10d = c10d
        self.orig_all_reduce = getattr(c10d, "all_reduce", None)
        wrapped = 0
        for name, spec in _FUNCTIONS.items():
            fn = getattr(c10d, name, None)
            if fn is None or getattr(fn, "_profile_train_comm", False):
                continue
            try:
                wrapper = self.wrap(name, fn, spec)
            except Exception as e:  # a signature this version does not have: left as it is
                self.fail("wrap " + name, e)
                continue
            setattr(c10d, name, wrapper)
            if getattr(dist, name, None) is fn:
                setattr(dist, name, wrapper)
            wrapped += 1
        bc = getattr(dist, "_broadcast_coalesced", None)
        if bc is not None and not getattr(bc, "_profile_train_comm", False):
            dist._broadcast_coalesced = self.wrap_broadcast_coalesced(bc)
        if wrapped:
            self.hooks.append(_HOOK_FUNCTIONS)
        try:
            self.install_ddp()
        except Exception as e:
            self.fail("ddp patch", e)
        return True

    def wrap(self, name, fn, spec):
        kind, in_name, out_name = spec
        params = list(inspect.signature(fn).parameters)
        pos = {p: i for i, p in enumerate(params)}
        for needed in ("group",) + tuple(n for n in (in_name, out_name) if n):
            if needed not in pos:
                raise TypeError("%s has no argument %r" % (name, needed))
        g_i = pos["group"]
        in_i = pos.get(in_name) if in_name else None
        out_i = pos.get(out_name) if out_name else None
        a_i = pos.get("async_op")
        always_async = name in _ALWAYS_ASYNC
        if a_i is None and not always_async and name not in ("send", "recv"):
            raise TypeError("%s has no async_op argument" % name)
        coalescible = name in _COALESCED_BY_PYTHON
        watch = self
        tls = self.tls
        is_compiling = self.is_compiling

        def wrapper(*args, **kwargs):
            # While dynamo traces, is_compiling() is a constant True to it: the original is traced as it would be.
            if is_compiling() or not watch.recording() or getattr(tls, "inside", False):
                return fn(*args, **kwargs)
            try:
                pre = watch.before(kind, name, args, kwargs, in_i, in_name, out_i, out_name, g_i, a_i,
                                   always_async, coalescible)
            except Exception as e:
                watch.fail(name, e)
                pre = None
            if pre is None:
                return fn(*args, **kwargs)
            result, call_ns, return_ns = _timed_call(tls, fn, args, kwargs)
            try:
                watch.after(pre, result, call_ns, return_ns)
            except Exception as e:
                watch.fail(name, e)
            return result

        functools.update_wrapper(wrapper, fn)
        wrapper._profile_train_comm = True
        return wrapper

    # ---- one call ---------------------------------------------------------------------------------------
    def measure(self, x):
        """(elements, dtype, element size, first tensor) of a tensor or a list of tensors; complex tensors as
        their real pairs (c10d sends view_as_real)."""
        Tensor = self.torch.Tensor
        if isinstance(x, Tensor):
            n, first = x.numel(), x
        elif isinstance(x, (list, tuple)):
            n, first = 0, None
            for t in x:
                if isinstance(t, Tensor):
                    n += t.numel()
                    if first is None:
                        first = t
            if first is None:
                return 0, None, 0, None
        else:
            return 0, None, 0, None
        dt = first.dtype
        size = first.element_size()
        if dt in self.real_of:
            dt = self.real_of[dt]
            n *= 2
            size //= 2
        return n, dt, size, first

    def group_info(self, pg):
        info = self.pg_info.get(pg)
        if info is None:
            try:  # "cpu:gloo,cuda:nccl": one backend, and one counter, per device; "cpu:gloo,cuda:gloo": one
                config = str(self.c10d.get_backend_config(pg))
                multi = len({part.split(":")[-1] for part in config.split(",")}) > 1
            except Exception:
                multi = False
            try:
                backend = str(pg.name())
            except Exception:
                backend = ""
            device = {"nccl": "cuda", "xccl": "xpu", "hccl": "hpu"}.get(backend, "cpu")
            info = (str(getattr(pg, "group_name", "") or ""), str(getattr(pg, "group_desc", "") or ""),
                    int(pg.size()), multi, device)
            try:
                self.pg_info[pg] = info
            except TypeError:
                pass
        return info

    def counter(self, pg, multi, tensor):
        """The object whose _get_sequence_number_for_group counts this collective: the group, or with one
        backend per device (init_process_group's default on a GPU host: cpu:gloo,cuda:nccl) the tensor's."""
        if multi and tensor is not None:
            try:
                return pg._get_backend(tensor.device)
            except Exception:
                return pg
        return pg

    @staticmethod
    def read_seq(src):
        try:
            return int(src._get_sequence_number_for_group())
        except Exception:
            return None

    def before(self, kind, name, args, kwargs, in_i, in_name, out_i, out_name, g_i, a_i, always_async,
               coalescible):
        c10d = self.c10d
        pg = _arg(args, kwargs, g_i, "group")
        if pg is None:
            pg = c10d._world.default_pg
        if not isinstance(pg, c10d.ProcessGroup):
            return None  # not a member of the group (the call does nothing) or not initialized (it raises)
        if coalescible and pg in c10d._world.pg_coalesce_state:
            with self.lock:
                self.coalesced += 1
            return None
        if always_async:
            async_op = True
        elif a_i is not None:
            async_op = bool(_arg(args, kwargs, a_i, "async_op", False))
        else:
            async_op = False  # send / recv: they wait
        n_in, dt_in, sz_in, t_in = self.measure(_arg(args, kwargs, in_i, in_name)) if in_name else (0, None, 0, None)
        if out_name == in_name:
            n_out, dt_out, sz_out, t_out = n_in, dt_in, sz_in, t_in
        else:
            n_out, dt_out, sz_out, t_out = self.measure(_arg(args, kwargs, out_i, out_name)) if out_name else \
                (0, None, 0, None)
        gname, gdesc, gsize, multi, gdevice = self.group_info(pg)
        t = t_in if t_in is not None else t_out
        if kind == "all_gather":
            nbytes = n_out * sz_out
        elif kind == "gather":
            nbytes = n_in * sz_in * gsize
        elif kind == "scatter":
            nbytes = n_out * sz_out * gsize
        else:
            nbytes = n_in * sz_in
        dt = dt_in if dt_in is not None else dt_out
        dtype = None if dt is None else self.dtype_names.get(dt) or str(dt).replace("torch.", "")
        device = t.device.type if t is not None else gdevice
        src = None if kind in _P2P else self.counter(pg, multi, t)
        seq0 = self.read_seq(src) if src is not None else None
        rec = [kind, name, gname, gdesc, gsize, seq0, dtype, n_in, n_out, nbytes, device, async_op,
               None, None, None, self.S.steps_seen()]
        return rec, src

    def after(self, pre, result, call_ns, return_ns):
        rec, src = pre
        if src is not None:
            seq0 = rec[5]
            seq = self.read_seq(src)
            rec[5] = seq if seq is not None and seq != seq0 else None
        rec[12] = call_ns
        rec[13] = return_ns
        hook = getattr(self.tls, "ddp_hook", None)
        if hook is not None:
            rec.append(hook)  # "ddp_hook"
        if rec[11]:  # async: completion from the work's future, on the CPU
            if rec[10] == "cpu" and result is not None:
                try:
                    fut = result.get_future()
                except Exception:
                    fut = None  # gloo's send / recv work has none
                if fut is not None:
                    fut.add_done_callback(functools.partial(_completed, rec))
        elif rec[10] == "cpu" or rec[0] == "barrier":
            rec[_END] = return_ns
        self.keep(rec)

    # ---- DDP's parameter and buffer broadcasts ------------------------------------------------------------
    def wrap_broadcast_coalesced(self, fn):
        watch = self
        tls = self.tls

        def _broadcast_coalesced(*args, **kwargs):
            if watch.is_compiling() or not watch.recording() or getattr(tls, "inside", False):
                return fn(*args, **kwargs)
            pre = None
            try:
                pg = _arg(args, kwargs, 0, "process_group")
                tensors = list(_arg(args, kwargs, 1, "tensors") or [])
                if isinstance(pg, watch.c10d.ProcessGroup) and tensors:
                    info = watch.group_info(pg)
                    src = watch.counter(pg, info[3], tensors[0])
                    pre = (pg, tensors, info, src, watch.read_seq(src), watch.S.steps_seen())
            except Exception as e:
                watch.fail("_broadcast_coalesced", e)
            if pre is None:
                return fn(*args, **kwargs)
            result, call_ns, return_ns = _timed_call(tls, fn, args, kwargs)
            try:
                watch.after_broadcast_coalesced(pre, _arg(args, kwargs, 2, "buffer_size"), call_ns, return_ns)
            except Exception as e:
                watch.fail("_broadcast_coalesced", e)
            return result

        functools.update_wrapper(_broadcast_coalesced, fn)
        _broadcast_coalesced._profile_train_comm = True
        return _broadcast_coalesced

    def after_broadcast_coalesced(self, pre, buffer_size, call_ns, return_ns):
        pg, tensors, (gname, gdesc, gsize, multi, _), src, seq0, step = pre
        seq1 = self.read_seq(src)
        # The broadcasts it issued: its own bucket assignment (by dtype and device, up to buffer_size bytes), the
        # same for the same tensor shapes (DDP's buffers before every forward): kept for them.
        key = (int(buffer_size),) + tuple((t.dtype, t.device, t.numel()) for t in tensors)
        buckets = self.bc_buckets.get(key)
        if buckets is None:
            buckets, _ = self.torch.distributed._compute_bucket_assignment_by_size(tensors, [int(buffer_size)])
            if len(self.bc_buckets) >= 16:
                self.bc_buckets.clear()
            self.bc_buckets[key] = buckets
        k = len(buckets)
        exact = seq0 is not None and seq1 is not None and seq1 - seq0 == k
        for i, idx in enumerate(buckets):
            n, dt, size, first = self.measure([tensors[j] for j in idx])
            dtype = None if dt is None else self.dtype_names.get(dt) or str(dt).replace("torch.", "")
            device = first.device.type if first is not None else "cpu"
            rec = ["broadcast", "_broadcast_coalesced", gname, gdesc, gsize, seq0 + 1 + i if exact else None,
                   dtype, n, n, n * size, device, False, call_ns, return_ns,
                   return_ns if device == "cpu" else None, step]
            self.keep(rec)

    # ---- DDP ----------------------------------------------------------------------------------------------
    def install_ddp(self):
        torch = self.torch
        ddp_mod = importlib.import_module(_DDP_MODULE)
        DDP = ddp_mod.DistributedDataParallel
        dist = torch.distributed
        watch = self
        tls = self.tls
        orig_init = DDP.__init__
        orig_register = DDP.register_comm_hook
        orig_builtin = getattr(DDP, "_register_builtin_comm_hook", None)
        orig_c_register = dist._register_comm_hook
        orig_c_builtin = getattr(dist, "_register_builtin_comm_hook", None)
        self.orig_c_register = orig_c_register

        def __init__(self, *args, **kwargs):
            orig_init(self, *args, **kwargs)
            try:
                watch.install_ddp_hook(self)
            except Exception as e:
                watch.fail("ddp hook", e)

        # A hook the user registers after ours: DDP's own method runs (its checks, logging, _comm_hooks); its
        # final dist._register_comm_hook(self.reducer, ...) is taken over (claimed) to make the user's hook the
        # one ours calls.
        def register_comm_hook(self, state, hook):
            st = self.__dict__.get(_DDP_ATTR)
            if st is None or st.delegate is not None:
                return orig_register(self, state, hook)
            tls.claim = (getattr(self, "reducer", None), st)
            try:
                return orig_register(self, state, hook)
            finally:
                tls.claim = None

        def _register_builtin_comm_hook(self, comm_hook_type):
            st = self.__dict__.get(_DDP_ATTR)
            if st is None or st.delegate is not None:
                return orig_builtin(self, comm_hook_type)
            tls.claim = (getattr(self, "reducer", None), st)
            try:
                return orig_builtin(self, comm_hook_type)
            finally:
                tls.claim = None

        def _register_comm_hook(reducer, state, comm_hook):
            claim = getattr(tls, "claim", None)
            if claim is not None and claim[0] is reducer:
                tls.claim = None
                claim[1].delegate_to(comm_hook, state)
                return None
            return orig_c_register(reducer, state, comm_hook)

        def _register_builtin(reducer, comm_hook_type):
            claim = getattr(tls, "claim", None)
            if claim is not None and claim[0] is reducer:
                tls.claim = None
                hook = watch.builtin_hooks().get(getattr(comm_hook_type, "name", str(comm_hook_type)))
                if hook is not None:
                    st = claim[1]
                    st.delegate_to(hook, st.process_group())
                    return None
            return orig_c_builtin(reducer, comm_hook_type)

        for fn, orig in ((__init__, orig_init), (register_comm_hook, orig_register),
                         (_register_builtin_comm_hook, orig_builtin), (_register_comm_hook, orig_c_register),
                         (_register_builtin, orig_c_builtin)):
            if orig is not None:
                functools.update_wrapper(fn, orig)
        DDP.__init__ = __init__
        DDP.register_comm_hook = register_comm_hook
        if orig_builtin is not None and orig_c_builtin is not None:
            DDP._register_builtin_comm_hook = _register_builtin_comm_hook
            dist._register_builtin_comm_hook = _register_builtin
        dist._register_comm_hook = _register_comm_hook

    def builtin_hooks(self):
        """BuiltinCommHookType name -> its Python hook in default_hooks (the same arithmetic)."""
        hooks = getattr(self, "_builtin_hooks", None)
        if hooks is None:
            hooks = {}
            try:
                dh = importlib.import_module(_DEFAULT_HOOKS)
                for name, attr in _BUILTIN_HOOKS.items():
                    fn = getattr(dh, attr, None)
                    if fn is not None:
                        hooks[name] = fn
            except Exception:
                pass
            self._builtin_hooks = hooks
        return hooks

    def install_ddp_hook(self, ddp):
        """Registers our hook on a DDP model just built, or notes why not. Decided before registering: a hook
        cannot be taken back."""
        if self.S.is_worker or not self.S.active:
            return
        torch = self.torch
        dist = torch.distributed
        why = None
        reducer = getattr(ddp, "reducer", None)
        pg = getattr(ddp, "process_group", None)
        if reducer is None:
            why = "DDP built no reducer (every parameter's all-reduce is delayed)"
        elif pg is None:
            why = "DDP has no process group"
        elif getattr(ddp, "_comm_hooks", None):
            why = "DDP registered a comm hook of its own (mixed precision or optimizer in backward)"
        elif getattr(ddp, "_use_python_reducer", False):
            why = "the Python reducer (compiled autograd) calls comm hooks per parameter"
        else:
            try:
                logging_data = ddp._get_ddp_logging_data()
            except Exception:
                logging_data = {}
            world = int(pg.size())
            builtins = getattr(dist, "BuiltinCommHookType", None)
            names = list(getattr(builtins, "__members__", {}) or {})
            hooks = self.builtin_hooks()
            if logging_data.get("comm_hook"):
                why = "the model already has a comm hook (%s)" % logging_data.get("comm_hook")
            elif any(getattr(m, "sparse", False) for m in ddp.module.modules()
                     if isinstance(m, (torch.nn.Embedding, torch.nn.EmbeddingBag))):
                why = "sparse gradients (the reducer treats their buckets apart)"
            elif getattr(ddp, "gradient_as_bucket_view", False) and world & (world - 1):
                why = ("gradient_as_bucket_view with a world size of %d: the reducer divides gradients that are "
                       "views of their bucket, which equals a hook's multiplication only for a power of two" % world)
            elif any(n not in hooks for n in names):
                why = "no Python equivalent of the builtin comm hooks %s" % [n for n in names if n not in hooks]
        if why is not None:
            self.note("ddp hook not installed: " + why)
            return
        st = _DdpHookState(self, ddp, pg)
        self.orig_c_register(reducer, st, _ddp_bucket_hook)
        ddp.__dict__[_DDP_ATTR] = st
        with self.lock:
            self.ddp_models += 1
            if _HOOK_DDP not in self.hooks:
                self.hooks.append(_HOOK_DDP)

    def bucket_record(self, pg, tensor, call_ns, return_ns, seq0, seq1, step):
        n, dt, size, _ = self.measure(tensor)
        gname, gdesc, gsize, multi, _ = self.group_info(pg)
        dtype = None if dt is None else self.dtype_names.get(dt) or str(dt).replace("torch.", "")
        return ["all_reduce", "ddp_bucket", gname, gdesc, gsize,
                seq1 if seq1 is not None and seq1 != seq0 else None, dtype, n, n, n * size,
                tensor.device.type, True, call_ns, return_ns, None, step]

    # ---- facts ------------------------------------------------------------------------------------------
    def facts(self, final):
        """facts.collectives, or None when this process issued none and no hook was used (no process group)."""
        with self.lock:
            n = len(self.instances)
            kept = self.instances if final or n <= _LIVE_INSTANCES else self.instances[:_LIVE_INSTANCES]
            kept = list(kept)
            dropped, coalesced, notes, hooks = self.dropped, self.coalesced, list(self.notes), list(self.hooks)
        if not kept and not dropped and not coalesced and not notes and not self.ddp_models:
            return None
        out = {"hooks": hooks, "dropped": dropped,
               "instances": [dict(zip(_FIELDS, r)) if len(r) == len(_FIELDS) else
                             dict(zip(_FIELDS + ("ddp_hook",), r)) for r in kept],
               "complete": bool(final)}
        if coalesced:
            notes.append("%d call(s) inside torch.distributed._coalescing_manager not recorded (issued as one "
                         "fused collective the shim does not see)" % coalesced)
        if notes:
            out["notes"] = notes
        return out


def _completed(rec, _fut):
    rec[_END] = _now()


class _DdpHookState:
    """The state our DDP comm hook gets: the model (weakly: the reducer holds this state), its process group, and
    the hook the user registered later (delegate), if any."""

    def __init__(self, watch, ddp, pg):
        self.watch = watch
        self.ddp = weakref.ref(ddp)
        self.pg = pg
        self.delegate = None     # (hook, state, name)
        self.silent = set()      # names of delegate hooks already noted for issuing no visible collective

    def process_group(self):
        ddp = self.ddp()
        pg = getattr(ddp, "process_group", None) if ddp is not None else None
        return pg if pg is not None else self.pg

    def delegate_to(self, hook, state):
        name = getattr(hook, "__qualname__", None) or getattr(hook, "__name__", None) or type(hook).__name__
        self.delegate = (hook, state, str(name))


def _ddp_bucket_hook(st, bucket):
    """Our DDP comm hook: the reducer's built-in all-reduce (each gradient times 1 / world size, then an async
    all_reduce of the bucket), recorded as one "ddp_bucket" instance; or the hook the user registered later."""
    watch = st.watch
    d = st.delegate
    if d is not None:
        hook, state, name = d
        if not watch.recording():
            return hook(state, bucket)
        tls = watch.tls
        prev = getattr(tls, "ddp_hook", None)
        before = len(watch.instances) + watch.dropped
        tls.ddp_hook = name
        try:
            return hook(state, bucket)
        finally:
            tls.ddp_hook = prev
            if len(watch.instances) + watch.dropped == before and name not in st.silent:
                st.silent.add(name)
                watch.note("DDP comm hook %s issued no collective through torch.distributed's functions (it "
                           "communicates another way, or not at all): its buckets are not recorded" % name)
    pg = st.process_group()
    tensor = bucket.buffer()
    # The reducer, with no hook, multiplies each gradient by this while copying it into the bucket (at::mul_out
    # with the wrapped scalar 1.0 / div_factor): the same op on the same values, so the same bits.
    tensor.mul_(1.0 / pg.size())
    if not watch.recording():
        return watch.orig_all_reduce(tensor, group=pg, async_op=True).get_future().then(_bucket_value)
    pre = None
    try:
        multi = watch.group_info(pg)[3]
        src = watch.counter(pg, multi, tensor)
        pre = (src, watch.read_seq(src), watch.S.steps_seen())
    except Exception as e:
        watch.fail("ddp hook", e)
    call_ns = _now()
    fut = watch.orig_all_reduce(tensor, group=pg, async_op=True).get_future()
    return_ns = _now()
    if pre is None:
        return fut.then(_bucket_value)
    rec = None
    try:
        src, seq0, step = pre
        rec = watch.bucket_record(pg, tensor, call_ns, return_ns, seq0, watch.read_seq(src), step)
        watch.keep(rec)
    except Exception as e:
        watch.fail("ddp hook", e)
    if rec is None or rec[10] != "cpu":
        return fut.then(_bucket_value)
    return fut.then(functools.partial(_bucket_done, rec))


def _bucket_value(fut):
    return fut.value()[0]


def _bucket_done(rec, fut):
    rec[_END] = _now()
    return fut.value()[0]
