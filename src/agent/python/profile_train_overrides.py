"""profile-train Python shim, the knob overrides beyond the DataLoader's and autocast (tune's knobs; keys:
_OVERRIDE_KEYS in profile_train_shim.py): threads and backend flags at import, channels_last and torch.compile on
the top-level model at its first call, foreach / fused at an optimizer's construction. Called by the patches
(profile_train_patches.py, which loads this file next to it by path); split from that file."""

import inspect


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
