"""profile-train Python shim, part 2: the patches into torch that emit the step and phase ranges and collect the
DataLoader, optimizer and AMP facts (profile_train_shim.py holds the state, the step model and the facts file;
it loads this file next to it and calls install() once torch is imported).

  - DataLoader.__init__ / __iter__ / iterator __next__: overrides, facts, step boundaries and data-wait ranges
  - DataLoader worker loop and fetchers: fetch ranges in worker processes, a finalize mark before os._exit
  - nn.Module.__call__ of the top-level model: the forward range (and autocast when an amp override asks)
  - Tensor.backward / autograd.backward: the backward range
  - optimizer step hooks and Optimizer.zero_grad: their ranges, optimizer facts, steps bounded by optimizer steps
  - GradScaler.__init__: AMP facts; at exit: the open step dropped, the facts file, the agent's final flush
  - the knob overrides beyond the DataLoader's and autocast (apply_* below): threads and backend flags at import,
    channels_last and torch.compile on the top-level model at its first call, foreach / fused at an optimizer's
    construction; each one applied is noted in facts.overrides_applied, each one that cannot act on this program
    in facts.overrides_failed with the reason (the program runs on without it; the tuner fails that trial)
Every wrapper calls through to torch's own function when the shim is inactive, in a worker or on the shim's own
thread; each other thread that trains has its own steps (the shim's per-thread state). A failure in a fact is
noted in the facts file, never raised into the user's program.
"""

import atexit
import importlib
import inspect
import os


def install(torch, shim):
    """Patches torch for the shim module `shim` (its state S and the protocol's constants)."""
    S = shim.S
    _OVERRIDE_KEYS, _OVERRIDE_BATCH_SIZE = shim._OVERRIDE_KEYS, shim._OVERRIDE_BATCH_SIZE
    _OVERRIDE_AMP = shim._OVERRIDE_AMP
    _CONTROL_FINALIZE = shim._CONTROL_FINALIZE
    S.torch = torch
    S.nvtx.bind_lazily(torch)
    import torch.nn as nn
    import torch.utils.data.dataloader as dl
    import torch.utils.data._utils.worker as worker_mod
    import torch.utils.data._utils.fetch as fetch_mod
    opt_mod = importlib.import_module("torch.optim.optimizer")

    def after_fork_in_child():
        S.is_worker = True
        S.step_open = False
        S.active = True
        S.writer = None  # the parent's facts writer thread does not exist here

    os.register_at_fork(after_in_child=after_fork_in_child)
    apply_process_overrides(torch, S)
    install_optimizer_override(torch, S)

    # ---- DataLoader: overrides + facts ------------------------------------------------------------------
    orig_init = dl.DataLoader.__init__
    init_sig = inspect.signature(orig_init)

    def dl_init(self, *args, **kwargs):
        ov = S.overrides
        if ov and not S.is_worker:
            try:
                ba = init_sig.bind(self, *args, **kwargs)
                a = ba.arguments
                for key, name in _OVERRIDE_KEYS.items():
                    if name is not None and key != _OVERRIDE_BATCH_SIZE and key in ov:
                        a[name] = ov[key]
                if _OVERRIDE_BATCH_SIZE in ov and a.get("batch_sampler") is None and \
                        a.get("batch_size", 1) is not None:
                    a["batch_size"] = int(ov[_OVERRIDE_BATCH_SIZE])
                if int(a.get("num_workers", 0) or 0) == 0:
                    a["prefetch_factor"] = None
                    a["persistent_workers"] = False
                args, kwargs = ba.args[1:], ba.kwargs
            except Exception as e:
                S.note_error("overrides", e)
        orig_init(self, *args, **kwargs)

    dl.DataLoader.__init__ = dl_init

    def loader_facts(loader):
        try:
            S.facts["dataloader"] = {
                "num_workers": int(loader.num_workers),
                "pin_memory": bool(loader.pin_memory),
                "batch_size": loader.batch_size,
                "prefetch_factor": loader.prefetch_factor,
                "persistent_workers": bool(loader.persistent_workers),
            }
        except Exception as e:
            S.note_error("dataloader", e)

    orig_iter = dl.DataLoader.__iter__

    def dl_iter(self):
        # Start the agent before worker processes fork, so they inherit it and write their own files as
        # children of this process.
        if S.nvtx.backend == "unbound" and not S.is_worker:
            S.nvtx.bind(torch)
        it = orig_iter(self)
        try:
            it._pt_loader = self
        except Exception:
            pass
        return it

    dl.DataLoader.__iter__ = dl_iter

    base_iter = dl._BaseDataLoaderIter
    orig_next = base_iter.__next__

    def it_next(self):
        if not S.active or S.is_worker or not S.training_thread():
            return orig_next(self)
        if not S.loader_mode:
            S.loader_mode = True
            S.close_step()
        loader = getattr(self, "_pt_loader", None)
        if loader is not None and "dataloader" not in S.facts:
            loader_facts(loader)
        S.step_at_fetch()
        if not S.active:
            return orig_next(self)
        S.nvtx.push("enumerate(DataLoader)#%s.__next__" % type(self).__name__)
        try:
            batch = orig_next(self)
        except StopIteration:
            S.nvtx.pop()
            S.close_step(discard=True)
            raise
        except BaseException:
            S.nvtx.pop()
            raise
        S.nvtx.pop()
        return batch

    base_iter.__next__ = it_next

    # ---- worker processes: fetch ranges, flush before os._exit ----------------------------------------------
    orig_worker_loop = worker_mod._worker_loop

    def worker_loop(*args, **kwargs):
        S.is_worker = True
        try:
            return orig_worker_loop(*args, **kwargs)
        finally:
            # The worker leaves through os._exit next: write everything and the final status now.
            S.nvtx.mark(_CONTROL_FINALIZE)

    worker_mod._worker_loop = worker_loop

    for cls_name in ("_MapDatasetFetcher", "_IterableDatasetFetcher"):
        cls = getattr(fetch_mod, cls_name, None)
        if cls is None:
            continue
        orig_fetch = cls.fetch

        def fetch(self, index, _orig=orig_fetch):
            if not S.is_worker:
                return _orig(self, index)
            S.nvtx.push("## dataloader worker fetch ##")
            try:
                return _orig(self, index)
            finally:
                S.nvtx.pop()

        cls.fetch = fetch

    # ---- forward -----------------------------------------------------------------------------------------
    orig_call = nn.Module.__call__

    is_compiling = getattr(getattr(torch, "compiler", None), "is_compiling", lambda: False)

    def module_call(self, *args, **kwargs):
        # While torch.compile traces a model (the compile override, or the user's own), the submodules' calls are
        # traced straight through: is_compiling() is a constant to the tracer, so none of the shim enters the graph.
        if is_compiling():
            return orig_call(self, *args, **kwargs)
        if S.fwd_depth or not S.active or S.is_worker or not S.training_thread():
            return orig_call(self, *args, **kwargs)
        if S.model_id is None:
            if not S.take_model(self):
                return orig_call(self, *args, **kwargs)
            if len(S.models) == 1:  # the process's first model (a second training thread's keeps its own)
                apply_model_overrides(torch, S, self)
        if id(self) != S.model_id:
            return orig_call(self, *args, **kwargs)
        if getattr(S, "cl_inputs", False):
            args, kwargs = channels_last_inputs(torch, args, kwargs)
        S.step_at_forward()
        S.memory_hook("on_forward", args, kwargs)
        S.fwd_depth += 1
        S.nvtx.push("## forward ##")
        try:
            amp = S.overrides.get(_OVERRIDE_AMP)
            device_type = S.facts.get("params", {}).get("device") or "cpu"
            device_type = device_type.split(":")[0]
            compiled = getattr(S, "compiled_model", None) is not None and id(self) == S.compiled_id
            call = compiled_call if compiled else orig_call
            if amp in ("bf16", "fp16", "off"):
                dtype = torch.bfloat16 if amp == "bf16" else torch.float16
                with torch.autocast(device_type=device_type, dtype=dtype, enabled=(amp != "off")):
                    S.note_autocast(device_type)
                    out = call(self, *args, **kwargs)
                # The program computes its loss after the model returns, outside this autocast: half-precision
                # outputs go back to fp32 there, as autocast itself does for its fp32 ops (mse_loss of a bf16
                # prediction and an fp32 target failed in backward: "Found dtype Float but expected BFloat16").
                return to_fp32(torch, out, dtype) if amp != "off" else out
            if "amp" not in S.facts or S.step_index <= 2:
                S.note_autocast(device_type)
            return call(self, *args, **kwargs)
        finally:
            S.nvtx.pop()
            S.fwd_depth -= 1
            if S.module_bw is not None:
                S.module_bw.forward_done()

    def compiled_call(self, *args, **kwargs):
        """The model through its torch.compile wrapper (the compile override). Its first calls trace and generate
        code: a failure there is the override's, not the program's: noted, the wrapper dropped, the call made
        again on the model as the program wrote it."""
        compiled = S.compiled_model
        if not S.compile_pending:
            return compiled(*args, **kwargs)
        try:
            out = compiled(*args, **kwargs)
        except Exception as e:
            S.compiled_model = None
            S.compile_pending = False
            override_failed(S, _COMPILE, "torch.compile failed: %s" % _short(e))
            S.facts.setdefault("model", {})["compiled"] = None
            return orig_call(self, *args, **kwargs)
        S.compile_calls = getattr(S, "compile_calls", 0) + 1
        if S.compile_calls >= 2:
            S.compile_pending = False
        return out

    nn.Module.__call__ = module_call

    # ---- backward ----------------------------------------------------------------------------------------
    def wrap_backward(fn):
        def backward(*args, **kwargs):
            if S.bwd_depth or not S.active or S.is_worker or not S.training_thread():
                return fn(*args, **kwargs)
            S.step_at_backward()
            S.memory_hook("on_backward", args, kwargs)
            S.note_loss(args, kwargs)
            S.bwd_depth += 1
            S.nvtx.push("## backward ##")
            try:
                return fn(*args, **kwargs)
            finally:
                if S.module_bw is not None:
                    S.module_bw.backward_returned()
                S.nvtx.pop()
                S.bwd_depth -= 1
        backward.__wrapped__ = fn
        backward.__doc__ = fn.__doc__
        return backward

    torch.Tensor.backward = wrap_backward(torch.Tensor.backward)
    torch.autograd.backward = wrap_backward(torch.autograd.backward)

    # ---- optimizer ---------------------------------------------------------------------------------------
    def optimizer_facts(opt):
        """Every optimizer that steps (GANs and actor-critic loops have two or more), from its parameter groups:
        a group's own value overrides the defaults (nanoGPT decays 0.1/0.0 per group with a default of 0.01).
        facts.optimizer is the first one; weight_decay there is the largest over its groups."""
        try:
            d = getattr(opt, "defaults", {}) or {}
            groups = list(getattr(opt, "param_groups", []) or [])

            def per_group(key):
                vals = [g.get(key, d.get(key)) for g in groups] or [d.get(key)]
                return [v if isinstance(v, (bool, int, float)) or v is None else str(v) for v in vals]

            wd = [v for v in per_group("weight_decay") if isinstance(v, (int, float)) and not isinstance(v, bool)]
            foreach, fused = per_group("foreach"), per_group("fused")
            rec = {"class": type(opt).__name__,
                   "foreach": foreach[0] if len(set(map(repr, foreach))) == 1 else None,
                   "fused": fused[0] if len(set(map(repr, fused))) == 1 else None,
                   "weight_decay": max(wd) if wd else None,
                   "weight_decay_groups": per_group("weight_decay"),
                   "lr_groups": per_group("lr"),
                   "param_groups": len(groups),
                   "params": int(sum(len(g.get("params", [])) for g in groups))}
            rec.update(optimizer_takes(torch, opt))
            if "optimizer" not in S.facts:
                S.facts["optimizer"] = {k: rec[k] for k in ("class", "foreach", "fused", "weight_decay",
                                                            "weight_decay_groups", "param_groups",
                                                            "takes_foreach", "takes_fused")}
                check_optimizer_override(S, opt)
            seen = S.facts.setdefault("optimizers", [])
            if len(seen) < 16:  # a loop that builds a new optimizer every step must not grow the facts file
                seen.append(rec)
            else:
                S.facts["optimizers_not_listed"] = S.facts.get("optimizers_not_listed", 0) + 1
        except Exception as e:
            S.note_error("optimizer facts", e)

    def pre_step(opt, args, kwargs):
        if not S.active or S.is_worker or not S.training_thread():
            return
        if not getattr(opt, "_pt_facts", False):
            opt._pt_facts = True
            optimizer_facts(opt)
        S.step_at_work()
        S.nvtx.push("Optimizer.step#%s.step" % type(opt).__name__)
        opt._pt_step_range = True

    def post_step(opt, args, kwargs):
        if not getattr(opt, "_pt_step_range", False):
            return
        opt._pt_step_range = False
        S.nvtx.pop()
        S.memory_hook("on_optimizer_step", opt)
        S.step_after_optimizer(opt)

    opt_mod.register_optimizer_step_pre_hook(pre_step)
    opt_mod.register_optimizer_step_post_hook(post_step)

    orig_zero = opt_mod.Optimizer.zero_grad

    def zero_grad(self, *args, **kwargs):
        if not S.active or S.is_worker or not S.training_thread():
            return orig_zero(self, *args, **kwargs)
        S.step_at_work()
        S.nvtx.push("Optimizer.zero_grad#%s.zero_grad" % type(self).__name__)
        try:
            return orig_zero(self, *args, **kwargs)
        finally:
            S.nvtx.pop()

    opt_mod.Optimizer.zero_grad = zero_grad

    # ---- GradScaler --------------------------------------------------------------------------------------
    try:
        scaler_cls = torch.amp.GradScaler
        orig_scaler_init = scaler_cls.__init__

        def scaler_init(self, *args, **kwargs):
            orig_scaler_init(self, *args, **kwargs)
            S.facts.setdefault("amp", {})["grad_scaler"] = bool(getattr(self, "_enabled", True))

        scaler_cls.__init__ = scaler_init
    except Exception as e:
        S.note_error("grad_scaler", e)

    def at_exit():
        if S.is_worker:
            return
        if S.step_open:
            # A step still open at exit was cut short (the loop broke out, or an exception): it ends with whatever
            # ran after the loop (evaluation, checkpointing, teardown), so it is dropped rather than recorded.
            try:
                S.close_step(discard=True)
            except Exception:
                pass
            S.step_open = False
        overrides_never_reached(S)
        S.loss_flush()
        S.write_facts(force=True)
        # Final flush now: an interpreter ending on KeyboardInterrupt re-kills itself with SIGINT and never runs
        # the C atexit handlers where the agent would flush. Only where NVTX was used: a process that never
        # emitted a range (torchrun's launcher) must not start the agent just to say goodbye.
        if S.nvtx.backend != "unbound":
            try:
                S.nvtx.mark(_CONTROL_FINALIZE)
            except Exception:
                pass

    atexit.register(at_exit)


# ---- knob overrides beyond the DataLoader's and autocast (tuner knobs; keys: _OVERRIDE_KEYS in the shim) -------
# Each apply_* function acts only on keys present in S.overrides, notes what it did in facts.overrides_applied
# (the value as torch reports it back) or why it could not in facts.overrides_failed, and never raises.

_THREADS = "torch.threads"
_TF32 = "backends.tf32"
_CUDNN_BENCHMARK = "backends.cudnn_benchmark"
_CHANNELS_LAST = "model.channels_last"
_COMPILE = "model.compile"
_OPTIMIZER_IMPL = "optimizer.impl"
_COMPILE_MODES = ("off", "default", "reduce-overhead", "max-autotune-no-cudagraphs")


def _short(e):
    text = "%s: %s" % (type(e).__name__, e)
    text = text.strip().splitlines()[0] if text.strip() else type(e).__name__
    return text[:300]


def override_applied(S, key, what):
    S.facts.setdefault("overrides_applied", {})[key] = what


def override_failed(S, key, why):
    S.facts.setdefault("overrides_failed", {})[key] = why
    S.facts.get("overrides_applied", {}).pop(key, None)


def _flag(v):
    if isinstance(v, bool):
        return v
    if isinstance(v, (int, float)):
        return v != 0
    return str(v).strip().lower() in ("1", "true", "on", "yes")


def apply_process_overrides(torch, S):
    """threads, tf32 and cudnn_benchmark: process-wide, at import (before the program's first parallel region,
    so the inter-op pool can still be sized). The backend flags are set again at the model's first call, in
    case the program set its own after importing torch."""
    ov = S.overrides
    if not ov or S.is_worker:
        return
    if _THREADS in ov:
        try:
            n = int(ov[_THREADS])
            if n < 0:
                raise ValueError("a thread count is >= 0, got %d" % n)
            if n > 0:
                torch.set_num_threads(n)
                what = {"torch_threads": int(torch.get_num_threads())}
                try:
                    torch.set_num_interop_threads(n)
                except Exception as e:  # the inter-op pool already started: intra-op alone
                    what["interop_note"] = _short(e)
                what["interop_threads"] = int(torch.get_num_interop_threads())
                override_applied(S, _THREADS, what)
            else:
                override_applied(S, _THREADS, {"torch_threads": int(torch.get_num_threads()), "note": "0: torch's own"})
        except Exception as e:
            override_failed(S, _THREADS, _short(e))
    set_backend_flags(torch, S)


def set_backend_flags(torch, S):
    ov = S.overrides
    if _TF32 in ov:
        try:
            on = _flag(ov[_TF32])
            torch.backends.cuda.matmul.allow_tf32 = on
            torch.backends.cudnn.allow_tf32 = on
            override_applied(S, _TF32, {"matmul": bool(torch.backends.cuda.matmul.allow_tf32),
                                        "cudnn": bool(torch.backends.cudnn.allow_tf32)})
        except Exception as e:
            override_failed(S, _TF32, "this torch has no TF32 flags (%s)" % _short(e))
    if _CUDNN_BENCHMARK in ov:
        try:
            torch.backends.cudnn.benchmark = _flag(ov[_CUDNN_BENCHMARK])
            override_applied(S, _CUDNN_BENCHMARK, {"benchmark": bool(torch.backends.cudnn.benchmark)})
        except Exception as e:
            override_failed(S, _CUDNN_BENCHMARK, "this torch has no cuDNN benchmark flag (%s)" % _short(e))


def apply_model_overrides(torch, S, model):
    """channels_last and compile on the top-level model, at its first call (the program built and moved it by
    then; its optimizer holds the same parameter objects: .to(memory_format) converts them in place)."""
    ov = S.overrides
    if not ov:
        return
    set_backend_flags(torch, S)
    if _CHANNELS_LAST in ov and _flag(ov[_CHANNELS_LAST]):
        try:
            convs = [m for m in model.modules() if isinstance(m, torch.nn.Conv2d)]
            if not convs:
                raise ValueError("the model (%s) has no 2-D convolution to run in channels_last"
                                 % type(model).__name__)
            model.to(memory_format=torch.channels_last)
            w = convs[0].weight
            fmt = "channels_last" if w.is_contiguous(memory_format=torch.channels_last) and not w.is_contiguous() \
                else "contiguous"
            S.facts.setdefault("model", {})["memory_format"] = fmt
            S.facts["model"]["channels_last"] = fmt == "channels_last"
            S.cl_inputs = True
            override_applied(S, _CHANNELS_LAST, {"memory_format": fmt, "inputs": "4-D tensors converted"})
        except Exception as e:
            override_failed(S, _CHANNELS_LAST, _short(e))
    if _COMPILE in ov:
        mode = str(ov[_COMPILE])
        try:
            if mode not in _COMPILE_MODES:
                raise ValueError("unknown compile mode %r (known: %s)" % (mode, ", ".join(_COMPILE_MODES)))
            if mode != "off":
                if not hasattr(torch, "compile"):
                    raise RuntimeError("this torch (%s) has no torch.compile" % torch.__version__)
                # torch.compile(model) rather than model.compile(): nothing of the program's model changes (its
                # state_dict keys, its __call__); the shim calls the compiled wrapper in the model's place.
                compiled = torch.compile(model, mode=None if mode == "default" else mode)
                S.compiled_model, S.compiled_id, S.compile_pending = compiled, id(model), True
                S.facts.setdefault("model", {})["compiled"] = type(compiled).__name__
                override_applied(S, _COMPILE, {"mode": mode, "module": type(model).__name__})
        except Exception as e:
            override_failed(S, _COMPILE, _short(e))


def to_fp32(torch, out, dtype, depth=0):
    """`out` (a tensor, or tuples / lists / dicts of them) with its floating tensors of `dtype` cast to fp32."""
    if isinstance(out, torch.Tensor):
        return out.float() if out.dtype == dtype else out
    if depth > 4:
        return out
    if isinstance(out, tuple) and not hasattr(out, "_fields"):
        return tuple(to_fp32(torch, o, dtype, depth + 1) for o in out)
    if isinstance(out, list):
        return [to_fp32(torch, o, dtype, depth + 1) for o in out]
    if type(out) is dict:
        return {k: to_fp32(torch, v, dtype, depth + 1) for k, v in out.items()}
    return out


def channels_last_inputs(torch, args, kwargs):
    def conv(x):
        if isinstance(x, torch.Tensor) and x.dim() == 4:
            return x.contiguous(memory_format=torch.channels_last)
        return x
    try:
        return tuple(conv(a) for a in args), {k: conv(v) for k, v in kwargs.items()}
    except Exception:
        return args, kwargs


def _torch_optimizer_init(cls, torch):
    """The first class in cls's MRO defined by torch.optim, and its own __init__ (unwrapped)."""
    for c in cls.__mro__:
        if c.__module__.startswith(torch.optim.__name__) and c is not torch.optim.Optimizer and "__init__" in vars(c):
            init = vars(c)["__init__"]
            return c, getattr(init, "__wrapped__", init)
    return None, None


def optimizer_takes(torch, opt):
    try:
        c, init = _torch_optimizer_init(type(opt), torch)
        params = inspect.signature(init).parameters if init is not None else {}
        return {"takes_foreach": "foreach" in params, "takes_fused": "fused" in params}
    except Exception:
        return {"takes_foreach": None, "takes_fused": None}


def install_optimizer_override(torch, S):
    """optimizer.impl = foreach | fused: the keyword set at the construction of every torch.optim optimizer whose
    __init__ takes it (the outermost construction only: AdamW's calls Adam's). A construction that refuses it
    (fused on an unsupported device or dtype) is retried as the program wrote it and the override noted failed;
    an optimizer that does not take it is noted at its first step (check_optimizer_override)."""
    impl = S.overrides.get(_OPTIMIZER_IMPL) if S.overrides else None
    if impl in (None, "default"):
        return
    if impl not in ("foreach", "fused"):
        override_failed(S, _OPTIMIZER_IMPL, "unknown optimizer implementation %r (known: default, foreach, fused)"
                        % (impl,))
        return
    depth = {"n": 0}
    for name, cls in list(vars(torch.optim).items()):
        if not (isinstance(cls, type) and issubclass(cls, torch.optim.Optimizer)) or "__init__" not in vars(cls):
            continue
        orig = vars(cls)["__init__"]
        try:
            sig = inspect.signature(orig)
        except (TypeError, ValueError):
            continue
        if impl not in sig.parameters:
            continue

        def init(self, *args, _orig=orig, _sig=sig, **kwargs):
            if depth["n"] or S.is_worker:
                return _orig(self, *args, **kwargs)
            depth["n"] += 1
            try:
                try:
                    ba = _sig.bind(self, *args, **kwargs)
                    ba.arguments[impl] = True
                    other = "fused" if impl == "foreach" else "foreach"
                    if other in _sig.parameters:
                        ba.arguments[other] = None if other == "foreach" else False
                    new_args, new_kwargs = ba.args[1:], ba.kwargs
                except TypeError:
                    return _orig(self, *args, **kwargs)  # the program's own call is wrong: its error, as written
                try:
                    out = _orig(self, *new_args, **new_kwargs)
                    if impl == "fused":
                        fused_devices_check(torch, self)
                    self._pt_impl = impl
                    return out
                except Exception as e:
                    override_failed(S, _OPTIMIZER_IMPL, "%s(%s=True) refused: %s" % (type(self).__name__, impl,
                                                                                    _short(e)))
                    self._pt_impl_failed = True
                    return _orig(self, *args, **kwargs)
            finally:
                depth["n"] -= 1

        init.__wrapped__ = orig
        init.__doc__ = orig.__doc__
        cls.__init__ = init


def fused_devices_check(torch, opt):
    """torch checks a fused optimizer's devices and dtypes at its first step, inside the program's loop: checked
    here instead, at construction, where a refusal can still fall back to the program's own choice."""
    try:
        from torch.optim.optimizer import _get_fused_kernels_supported_devices as supported
        devices = set(supported())
    except Exception:
        return
    for g in opt.param_groups:
        for p in g["params"]:
            if p.device.type not in devices or not torch.is_floating_point(p):
                raise RuntimeError("fused kernels support %s floating-point parameters, not %s %s"
                                   % ("/".join(sorted(devices)), p.device.type, p.dtype))


def overrides_never_reached(S):
    """At exit: an override of the model or the optimizer that found neither is one that could not apply."""
    ov = S.overrides or {}
    done = set(S.facts.get("overrides_applied", {})) | set(S.facts.get("overrides_failed", {}))
    for key in (_CHANNELS_LAST, _COMPILE):
        if key in ov and key not in done and _flag(ov[key] if key == _CHANNELS_LAST else ov[key] != "off") \
                and "model" not in S.facts:
            override_failed(S, key, "the program called no model (no nn.Module with parameters)")
    if ov.get(_OPTIMIZER_IMPL) in ("foreach", "fused") and _OPTIMIZER_IMPL not in done:
        override_failed(S, _OPTIMIZER_IMPL, "no torch.optim optimizer stepped")


def check_optimizer_override(S, opt):
    impl = S.overrides.get(_OPTIMIZER_IMPL) if S.overrides else None
    if impl not in ("foreach", "fused") or getattr(opt, "_pt_impl_failed", False):
        return
    if getattr(opt, "_pt_impl", None) == impl:
        groups = getattr(opt, "param_groups", []) or [{}]
        override_applied(S, _OPTIMIZER_IMPL, {"class": type(opt).__name__,
                                              impl: all(bool(g.get(impl)) for g in groups)})
    else:
        override_failed(S, _OPTIMIZER_IMPL, "%s takes no %s= (not a torch.optim optimizer with a %s implementation)"
                        % (type(opt).__name__, impl, impl))
