// The collectives section (collectives.h): each collective of the steady-state steps with its kind, group, size
// and timing, then the table by kind, group, dtype and size bucket.
#include "profile_train/analysis/collectives.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <unordered_map>

#include "profile_train/analysis/classify.h"
#include "profile_train/analysis/efficiency.h"
#include "profile_train/common/format.h"
#include "profile_train/common/strings.h"
#include "report_context.h"

namespace profile_train::analysis {

using trace::Category;
using trace::Event;

namespace {

bool has(std::string_view s, std::string_view p) { return s.find(p) != std::string_view::npos; }

}  // namespace

std::string collective_kind(std::string_view name) {
  std::string s = ascii_lower(name);
  if (const size_t colon = s.rfind(':'); colon != std::string::npos) s = s.substr(colon + 1);
  std::string t;  // without underscores: allreduce, allgatherbase, reducescattertensorcoalesced, ...
  for (char ch : s)
    if (ch != '_') t += ch;
  if (t.empty() || t.starts_with("wait") || t == "coalesced" || t == "startcoalescing" || t == "endcoalescing")
    return "";
  if (has(t, "allreduce")) return "all_reduce";
  if (has(t, "reducescatter")) return "reduce_scatter";
  if (has(t, "allgather")) return "all_gather";
  if (has(t, "alltoall")) return "all_to_all";
  if (has(t, "broadcast")) return "broadcast";
  if (has(t, "sendrecv") || t.starts_with("send") || t.starts_with("recv") || t.starts_with("isend") ||
      t.starts_with("irecv") || has(t, "batchisendirecv") || has(t, "p2p"))
    return "send_recv";
  if (has(t, "barrier")) return "barrier";
  if (t.starts_with("reduce")) return "reduce";
  if (has(t, "gather")) return "gather";
  if (has(t, "scatter")) return "scatter";
  return "other";
}

std::string collective_kind_of_kernel(std::string_view kernel_name) {
  const std::string l = ascii_lower(kernel_name);
  if (!l.starts_with("nccl") && !l.starts_with("rccl")) return "";
  const size_t a = l.find('_');
  if (a == std::string::npos) return "";
  size_t b = l.find_first_of("_(<", a + 1);
  if (b == std::string::npos) b = l.size();
  const std::string k = collective_kind(l.substr(a + 1, b - a - 1));
  return k == "other" ? "" : k;
}

std::optional<DtypeInfo> collective_dtype(std::string_view text) {
  std::string s = ascii_lower(trim_space(text));
  if (s.starts_with("c10::")) s = s.substr(5);
  if (s.starts_with("torch.")) s = s.substr(6);
  struct Entry {
    std::string_view text, name;
    int bytes;
  };
  static constexpr std::array<Entry, 30> kTable = {{
      {"float", "float32", 4},         {"float32", "float32", 4},      {"bfloat16", "bfloat16", 2},
      {"half", "float16", 2},          {"float16", "float16", 2},      {"double", "float64", 8},
      {"float64", "float64", 8},       {"long", "int64", 8},           {"long int", "int64", 8},
      {"long long", "int64", 8},       {"int64", "int64", 8},          {"int", "int32", 4},
      {"int32", "int32", 4},           {"short", "int16", 2},          {"short int", "int16", 2},
      {"int16", "int16", 2},           {"char", "int8", 1},            {"signed char", "int8", 1},
      {"int8", "int8", 1},             {"byte", "uint8", 1},           {"unsigned char", "uint8", 1},
      {"uint8", "uint8", 1},           {"bool", "bool", 1},            {"float8_e4m3fn", "float8_e4m3fn", 1},
      {"float8_e5m2", "float8_e5m2", 1}, {"float8_e4m3fnuz", "float8_e4m3fnuz", 1},
      {"float8_e5m2fnuz", "float8_e5m2fnuz", 1}, {"complexfloat", "complex64", 8},
      {"complexdouble", "complex128", 16}, {"complexhalf", "complex32", 4},
  }};
  for (const Entry& e : kTable)
    if (s == e.text) return DtypeInfo{std::string(e.name), e.bytes};
  return std::nullopt;
}

std::optional<double> bus_factor(std::string_view kind, int64_t n) {
  if (kind == "broadcast" || kind == "reduce" || kind == "send_recv") return 1.0;
  if (n < 2) return std::nullopt;
  const double nn = static_cast<double>(n);
  if (kind == "all_reduce") return 2.0 * (nn - 1) / nn;
  if (kind == "all_gather" || kind == "reduce_scatter" || kind == "all_to_all" || kind == "gather" || kind == "scatter")
    return (nn - 1) / nn;
  return std::nullopt;
}

std::optional<int64_t> collective_bytes(std::string_view kind, int64_t in_nelems, int64_t out_nelems, int elem_bytes,
                                        int64_t group_size) {
  if (elem_bytes <= 0 || kind == "barrier") return std::nullopt;
  const int64_t eb = elem_bytes;
  if (kind == "all_gather") {
    if (out_nelems >= 0) return out_nelems * eb;
    if (in_nelems >= 0 && group_size > 0) return in_nelems * group_size * eb;
    return std::nullopt;
  }
  if (kind == "send_recv") {
    const int64_t v = std::max(in_nelems, out_nelems);
    return v >= 0 ? std::optional<int64_t>(v * eb) : std::nullopt;
  }
  // gather / scatter: the whole gathered (scattered) array, n x one rank's part (nccl-tests' count x nranks).
  if (kind == "gather" && in_nelems >= 0 && group_size > 0) return in_nelems * group_size * eb;
  if (kind == "scatter" && out_nelems >= 0 && group_size > 0) return out_nelems * group_size * eb;
  if (in_nelems >= 0) return in_nelems * eb;
  if (kind == "reduce_scatter" && out_nelems >= 0 && group_size > 0) return out_nelems * group_size * eb;
  if (out_nelems >= 0 && kind != "reduce_scatter") return out_nelems * eb;
  return std::nullopt;
}

std::string size_bucket(std::optional<int64_t> bytes) {
  if (!bytes) return "unknown";
  static constexpr std::array<std::pair<int64_t, std::string_view>, 7> kEdges = {{
      {1000, "<1 KB"},
      {10000, "1-10 KB"},
      {100000, "10-100 KB"},
      {1000000, "100 KB-1 MB"},
      {10000000, "1-10 MB"},
      {100000000, "10-100 MB"},
      {1000000000, "100 MB-1 GB"},
  }};
  for (const auto& [edge, name] : kEdges)
    if (*bytes < edge) return std::string(name);
  return ">=1 GB";
}

std::optional<int64_t> tensor_elements(std::string_view dims) {
  if (has(dims, "...")) return std::nullopt;
  int depth = 0;
  int64_t sum = 0, prod = 1, num = 0;
  bool any = false, in_num = false, list_has_num = false;
  for (char ch : dims) {
    if (ch >= '0' && ch <= '9') {
      if (depth == 2) {
        if (num > (INT64_MAX - 9) / 10) return std::nullopt;
        num = num * 10 + (ch - '0');
        in_num = true;
      }
      continue;
    }
    if (in_num) {
      if (num != 0 && prod > INT64_MAX / num) return std::nullopt;
      prod *= num;
      num = 0;
      in_num = false;
      list_has_num = true;
    }
    if (ch == '[') {
      ++depth;
      if (depth == 2) {
        prod = 1;
        list_has_num = false;
      }
    } else if (ch == ']') {
      if (depth == 2 && list_has_num) {
        if (sum > INT64_MAX - prod) return std::nullopt;
        sum += prod;
        any = true;
      }
      --depth;
    }
  }
  return any ? std::optional<int64_t>(sum) : std::nullopt;
}

namespace {

// What is known of one collective call before it is counted.
struct Info {
  std::string kind;
  std::string pg, pg_desc;
  int64_t in = -1, out = -1, seq = -1;
  int32_t n = -1;
  std::optional<DtypeInfo> dtype;
  std::string evidence;  // collective_args | operator | annotation | shim | kernel_name
  bool has_size() const { return in >= 0 || out >= 0; }
};

struct Call {
  Info info;
  TimeNs start = 0, dur = 0;
  TimeNs exposed = 0;
  int64_t step = -1;
  std::optional<int64_t> bytes;
};

const trace::CollectiveArgs* args_of(const trace::Trace& t, const Event& e) {
  if (e.coll == 0 || e.coll >= t.collectives.size()) return nullptr;
  const trace::CollectiveArgs& a = t.collectives[e.coll];
  if (a.name != 0 && collective_kind(t.strings.get(a.name)).empty()) return nullptr;  // "wait": not a collective
  return &a;
}

Info info_from_args(const trace::Trace& t, const trace::CollectiveArgs& a) {
  Info i;
  i.kind = a.name != 0 ? collective_kind(t.strings.get(a.name)) : "";
  i.pg = t.strings.get(a.pg_name);
  i.pg_desc = t.strings.get(a.pg_desc);
  i.in = a.in_nelems;
  i.out = a.out_nelems;
  i.seq = a.seq;
  i.n = a.group_size;
  if (a.dtype != 0) i.dtype = collective_dtype(t.strings.get(a.dtype));
  i.evidence = "collective_args";
  return i;
}

// A host event's information: its args, else its name and (nccl:* / gloo:* ranges) its recorded inputs.
std::optional<Info> info_from_host(const trace::Trace& t, const Event& o) {
  if (const trace::CollectiveArgs* a = args_of(t, o)) {
    Info i = info_from_args(t, *a);
    if (i.kind.empty()) i.kind = collective_kind(t.name(o));
    if (!i.kind.empty()) return i;
  }
  const std::string& name = t.name(o);
  if (name == "record_param_comms" || !is_communication_operator(name)) return std::nullopt;
  Info i;
  i.kind = collective_kind(name);
  if (i.kind.empty()) return std::nullopt;
  i.evidence = "operator";
  if ((name.starts_with("nccl:") || name.starts_with("gloo:")) && o.inputs > 0 && o.inputs < t.op_inputs.size()) {
    const trace::OpInputs& in = t.op_inputs[o.inputs];
    if (auto n = tensor_elements(t.strings.get(in.dims))) {
      i.in = *n;
      i.evidence = "annotation";
    }
    const std::string& types = t.strings.get(in.types);
    if (types.size() > 2) {
      size_t end = types.find_first_of(",]", 1);
      i.dtype = collective_dtype(std::string_view(types).substr(1, end == std::string::npos ? std::string::npos : end - 1));
    }
  }
  return i;
}

// Fills what `into` lacks from `from` (a weaker source).
void complete(Info& into, const Info& from) {
  if (into.kind.empty() || into.kind == "other") into.kind = from.kind;
  if (into.pg.empty()) into.pg = from.pg, into.pg_desc = from.pg_desc;
  if (!into.has_size() && from.has_size()) {
    into.in = from.in;
    into.out = from.out;
    if (into.evidence.empty() || into.evidence == "kernel_name" || into.evidence == "operator") into.evidence = from.evidence;
  }
  if (into.seq < 0) into.seq = from.seq;
  if (into.n < 0) into.n = from.n;
  if (!into.dtype) into.dtype = from.dtype;
  if (into.evidence.empty()) into.evidence = from.evidence;
}

// Host communication ranges per thread, sorted by start: the operators around a kernel's launch.
class HostComm {
 public:
  explicit HostComm(const trace::Trace& t) : t_(t) {
    for (size_t i = 0; i < t.events.size(); ++i) {
      const Event& e = t.events[i];
      if (e.is_gpu || (e.cat != Category::kCpuOp && e.cat != Category::kUserAnnotation)) continue;
      if (!is_communication_operator(t.name(e)) && e.coll == 0) continue;
      by_thread_[{e.pid, e.tid}].push_back(i);
    }
  }
  // The information of the communication ranges around `ts` on the thread, innermost first.
  std::optional<Info> around(int64_t pid, int64_t tid, TimeNs ts) const {
    auto it = by_thread_.find({pid, tid});
    if (it == by_thread_.end()) return std::nullopt;
    const std::vector<size_t>& v = it->second;
    auto hi = std::upper_bound(v.begin(), v.end(), ts, [&](TimeNs x, size_t i) { return x < t_.events[i].start_ns; });
    std::optional<Info> got;
    int scanned = 0;
    for (auto p = hi; p != v.begin() && scanned < 64; ++scanned) {
      --p;
      const Event& e = t_.events[*p];
      if (e.end_ns() < ts) continue;
      if (auto i = info_from_host(t_, e)) {
        if (!got) got = *i;
        else complete(*got, *i);
        if (got->evidence == "collective_args" && got->has_size()) break;
      }
    }
    return got;
  }

 private:
  const trace::Trace& t_;
  std::map<std::pair<int64_t, int64_t>, std::vector<size_t>> by_thread_;
};

// The length of [s, e) covered by the merged intervals `m`.
TimeNs covered(const Intervals& m, TimeNs s, TimeNs e) {
  TimeNs got = 0;
  auto it = std::upper_bound(m.begin(), m.end(), s, [](TimeNs v, const Interval& iv) { return v < iv.end; });
  for (; it != m.end() && it->start < e; ++it) got += std::min(e, it->end) - std::max(s, it->start);
  return got;
}

// The shim's record of one call (facts.collectives.instances[]).
struct ShimCall {
  Info info;
  TimeNs call = 0, ret = 0, end = -1;
  bool async = false;
  std::string device;
};

std::vector<ShimCall> shim_calls(const nlohmann::json& facts) {
  std::vector<ShimCall> out;
  const auto c = facts.find("collectives");
  if (c == facts.end() || !c->is_object()) return out;
  const auto inst = c->find("instances");
  if (inst == c->end() || !inst->is_array()) return out;
  auto i64 = [](const nlohmann::json& o, const char* k, int64_t dflt) {
    const auto it = o.find(k);
    return it != o.end() && it->is_number_integer() ? it->get<int64_t>() : dflt;
  };
  auto str = [](const nlohmann::json& o, const char* k) {
    const auto it = o.find(k);
    if (it == o.end()) return std::string();
    if (it->is_string()) return it->get<std::string>();
    if (it->is_number_integer()) return std::to_string(it->get<int64_t>());
    return std::string();
  };
  for (const auto& o : *inst) {
    if (!o.is_object()) continue;
    ShimCall s;
    s.info.kind = collective_kind(str(o, "kind"));
    if (s.info.kind.empty()) continue;
    s.info.pg = str(o, "pg");
    s.info.pg_desc = str(o, "pg_desc");
    s.info.in = i64(o, "in_nelems", -1);
    s.info.out = i64(o, "out_nelems", -1);
    s.info.seq = i64(o, "seq", -1);
    const int64_t n = i64(o, "group_size", -1);
    s.info.n = n > 0 && n <= INT32_MAX ? static_cast<int32_t>(n) : -1;
    s.info.dtype = collective_dtype(str(o, "dtype"));
    s.info.evidence = "shim";
    s.call = i64(o, "call_ns", -1);
    s.ret = i64(o, "return_ns", -1);
    s.end = i64(o, "end_ns", -1);
    const auto a = o.find("async");
    s.async = a != o.end() && a->is_boolean() && a->get<bool>();
    s.device = str(o, "device");
    if (s.call < 0 || s.ret < s.call) continue;
    out.push_back(std::move(s));
  }
  std::sort(out.begin(), out.end(), [](const ShimCall& a, const ShimCall& b) { return a.call < b.call; });
  return out;
}

std::string human_bytes(double b) {
  if (b >= 1e9) return format_printf("%.3g GB", b / 1e9);
  if (b >= 1e6) return format_printf("%.3g MB", b / 1e6);
  if (b >= 1e3) return format_printf("%.3g KB", b / 1e3);
  return format_printf("%.0f B", b);
}

std::string pg_label(const Info& i) {
  if (i.pg.empty()) return "";
  return i.pg_desc.empty() || i.pg_desc == "undefined" ? i.pg : i.pg + " (" + i.pg_desc + ")";
}

// The training thread's compute on the host: its innermost operators that are not collectives (the gloo path:
// a collective on a worker thread is hidden while the training thread computes).
Intervals host_compute(const trace::Trace& t, int64_t pid, int64_t tid) {
  std::vector<const Event*> ops;
  for (const Event& e : t.events)
    if (!e.is_gpu && e.cat == Category::kCpuOp && e.pid == pid && e.tid == tid && e.dur_ns > 0) ops.push_back(&e);
  Intervals out;
  for (size_t i = 0; i < ops.size(); ++i) {
    const Event& e = *ops[i];
    const bool leaf = i + 1 == ops.size() || ops[i + 1]->start_ns >= e.end_ns();
    if (leaf && !is_communication_operator(t.name(e))) out.push_back({e.start_ns, e.end_ns()});
  }
  return merge_intervals(std::move(out));
}

}  // namespace

std::optional<model::Collectives> collectives_section(const Ctx& c, const RoleRanges& roles,
                                                      const nlohmann::json& facts, const GpuSpec* spec) {
  const trace::Trace& t = c.t;
  const auto& steps = c.si.steps;
  if (steps.empty() || c.total_ns <= 0) return std::nullopt;
  auto step_of = [&](TimeNs ts) -> int64_t {
    auto it = std::upper_bound(steps.begin(), steps.end(), ts, [](TimeNs v, const Step& s) { return v < s.end; });
    return it != steps.end() && it->start <= ts ? static_cast<int64_t>(it - steps.begin()) : -1;
  };
  // A call's time inside its step not covered by the merged `compute` intervals.
  auto exposed_in_step = [&](const Call& cl, const Intervals& compute) -> TimeNs {
    const Step& st = steps[static_cast<size_t>(cl.step)];
    const TimeNs s = std::max(cl.start, st.start), e = std::min(cl.start + cl.dur, st.end);
    return e > s ? (e - s) - covered(compute, s, e) : 0;
  };
  const std::vector<ShimCall> shim = shim_calls(facts);
  std::vector<Call> calls;
  std::vector<std::string> notes;
  std::string timing;
  bool host_compute_known = true;  // host ranges: the training thread's operators are in the trace

  // 1. GPU: one communication kernel, one call. The communication operators by thread are indexed only when a
  // kernel needs them (a trace without collectives pays nothing).
  std::optional<HostComm> host;
  int64_t filled_from_shim = 0;
  for (size_t p = 0; p < c.idx.kernels.size(); ++p) {
    if (c.idx.kernel_class(p).kind != KernelKind::kCommunication) continue;
    const Event& k = t.events[c.idx.kernels[p]];
    const int64_t s = step_of(k.start_ns);
    if (s < 0 || k.dur_ns <= 0) continue;
    Info info;
    if (const trace::CollectiveArgs* a = args_of(t, k)) info = info_from_args(t, *a);
    if (!info.has_size() || info.kind.empty()) {
      if (const size_t* op = c.idx.op_by_external_id.find(k.external_id)) {
        if (auto i = info_from_host(t, t.events[*op])) complete(info, *i);
      }
    }
    const size_t rt = c.idx.runtime_of(k.correlation);
    if ((!info.has_size() || info.kind.empty()) && rt != TraceIndex::Correlation::kNone) {
      const Event& r = t.events[rt];
      if (!host) host.emplace(t);
      if (auto i = host->around(r.pid, r.tid, r.start_ns)) complete(info, *i);
    }
    if ((!info.has_size() || info.kind.empty()) && rt != TraceIndex::Correlation::kNone && !shim.empty()) {
      // The shim's call the launch happened in (its [call, return] span holds the launch).
      const TimeNs ts = t.events[rt].start_ns;
      auto it = std::upper_bound(shim.begin(), shim.end(), ts, [](TimeNs v, const ShimCall& sc) { return v < sc.call; });
      while (it != shim.begin()) {
        --it;
        if (it->ret >= ts) {
          complete(info, it->info);
          ++filled_from_shim;
          break;
        }
        if (ts - it->call > 10'000'000'000) break;  // no call spans 10 s before the launch
      }
    }
    if (info.kind.empty() || info.kind == "other") {
      const std::string k2 = collective_kind_of_kernel(t.name(k));
      if (!k2.empty()) {
        if (info.kind.empty()) info.evidence = "kernel_name";
        info.kind = k2;
      }
    }
    if (info.kind.empty()) info.kind = "other";
    if (info.evidence.empty()) info.evidence = "kernel_name";
    Call call{std::move(info), k.start_ns, k.dur_ns, 0, s, std::nullopt};
    calls.push_back(std::move(call));
  }
  if (!calls.empty()) {
    timing = "gpu_kernels";
    for (Call& cl : calls) cl.exposed = exposed_in_step(cl, roles[Role::kKernel]);
    if (filled_from_shim > 0)
      notes.push_back(std::to_string(filled_from_shim) +
                      " communication kernels have their kind and size from the shim's record of the call that "
                      "launched them");
  }

  // 2. No GPU activity: the collectives' execution on the host (gloo's worker threads; nccl:* ranges of a
  // host-only trace).
  if (calls.empty() && !c.idx.has_gpu_activity) {
    std::map<std::pair<int64_t, int64_t>, TimeNs> open_until;  // per thread: the end of the last kept range
    for (const Event& e : t.events) {
      if (e.is_gpu || (e.cat != Category::kCpuOp && e.cat != Category::kUserAnnotation) || e.dur_ns <= 0) continue;
      const std::string& n = t.name(e);
      // gloo's ranges are the collective's execution on its worker thread; an nccl:* range is only the host's
      // enqueue of GPU work the trace lacks, which times nothing.
      if (!n.starts_with("gloo:")) continue;
      TimeNs& until = open_until[{e.pid, e.tid}];
      if (e.start_ns < until) continue;  // nested in a kept range
      until = e.end_ns();
      const int64_t s = step_of(e.start_ns);
      if (s < 0) continue;
      auto info = info_from_host(t, e);
      if (!info) continue;
      calls.push_back(Call{std::move(*info), e.start_ns, e.dur_ns, 0, s, std::nullopt});
    }
    if (!calls.empty()) {
      timing = "host_ranges";
      const Intervals compute = host_compute(t, c.si.main_pid, c.si.main_tid);
      host_compute_known = !intersect_intervals(compute, c.windows).empty();
      for (Call& cl : calls) cl.exposed = exposed_in_step(cl, compute);
      notes.push_back(host_compute_known
                          ? "timed by the collectives' host ranges (gloo:* on the process group's worker threads); "
                            "exposed: not overlapped by an operator of the training thread"
                          : "timed by the collectives' host ranges (gloo:* on the process group's worker threads); the "
                            "trace records no operator of the training thread, so how much compute hides them is unknown");
    }
  }

  // 3. Neither: the shim's records (`run` of a CPU program: gloo's work is in no range the capture records).
  if (calls.empty() && !shim.empty()) {
    std::map<int64_t, std::pair<TimeNs, TimeNs>> tail;  // step -> (last async issue, last async end)
    std::vector<bool> async;                              // parallel to calls
    for (const ShimCall& sc : shim) {
      if (sc.device == "cuda") continue;  // a GPU call's time is its kernel's, which the capture lacks
      const TimeNs end = sc.end >= sc.call ? sc.end : (sc.async ? -1 : sc.ret);
      if (end < 0) continue;
      const int64_t s = step_of(sc.call);
      if (s < 0) continue;
      calls.push_back(Call{sc.info, sc.call, std::max<TimeNs>(end - sc.call, 1), 0, s, std::nullopt});
      async.push_back(sc.async);
      if (sc.async) {
        auto& tl = tail[s];
        tl.first = std::max(tl.first, sc.call);
        tl.second = std::max(tl.second, end);
      }
    }
    if (!calls.empty()) {
      timing = "shim";
      // A blocking call holds the training thread all its time; asynchronous ones (DDP's buckets) hide behind the
      // backward pass that issues them until the last is issued: what runs past that point is waited for.
      for (size_t i = 0; i < calls.size(); ++i) {
        Call& cl = calls[i];
        if (!async[i]) {
          cl.exposed = cl.dur;
        } else {
          const auto& tl = tail[cl.step];
          const TimeNs s = std::max(cl.start, tl.first), e = std::min(cl.start + cl.dur, tl.second);
          cl.exposed = e > s ? e - s : 0;
        }
      }
      notes.push_back("timed by the shim from each call to its completion; exposed: blocking calls whole, asynchronous "
                      "ones (DDP's buckets) from the last one issued in the step to their completion");
    }
  }
  if (calls.empty()) return std::nullopt;

  model::Collectives out;
  out.timing = timing;
  const double nsteps = c.nsteps;
  // Sizes, ordinals and instances.
  std::sort(calls.begin(), calls.end(), [](const Call& a, const Call& b) { return a.start < b.start; });
  std::map<std::pair<int64_t, std::string>, int64_t> ordinal;
  double unknown_size = 0;
  for (Call& cl : calls) {
    const int eb = cl.info.dtype ? cl.info.dtype->bytes : 0;
    cl.bytes = collective_bytes(cl.info.kind, cl.info.in, cl.info.out, eb, cl.info.n);
    if (!cl.bytes && cl.info.kind != "barrier") unknown_size += 1;
    if (out.instances.size() < model::kMaxCollectiveInstances) {
      model::CollectiveInstance in;
      in.kind = cl.info.kind;
      in.process_group = cl.info.pg;
      in.seq = cl.info.seq;
      in.ordinal = ordinal[{cl.step, cl.info.pg.empty() ? "kind:" + cl.info.kind : cl.info.pg}]++;
      in.step_index = cl.step;
      in.step = steps[static_cast<size_t>(cl.step)].name;
      in.start_ns = cl.start;
      in.dur_ns = cl.dur;
      in.exposed_ns = cl.exposed;
      in.bytes = cl.bytes;
      in.group_size = cl.info.n;
      out.instances.push_back(std::move(in));
    }
  }
  out.unknown_size_calls_per_step = r6(unknown_size / nsteps);

  if (spec != nullptr && spec->link_gbps > 0 && timing == "gpu_kernels")
    out.link = model::LinkPeak{spec->link_name, spec->link_gbps, spec->link_source};

  // Rows: kind, group, dtype, size bucket.
  struct Acc {
    Info info;
    std::string bucket;
    int64_t calls = 0, sized = 0;
    double bytes = 0, sized_ns = 0;
    TimeNs ns = 0, exposed = 0;
    std::map<std::string, int64_t> evidence;
  };
  std::map<std::tuple<std::string, std::string, std::string, std::string>, Acc> rows;
  TimeNs total_ns = 0;
  for (const Call& cl : calls) {
    const std::string bucket = size_bucket(cl.bytes);
    Acc& a = rows[{cl.info.kind, pg_label(cl.info), cl.info.dtype ? cl.info.dtype->name : "", bucket}];
    if (a.calls == 0) a.info = cl.info, a.bucket = bucket;
    if (a.info.n < 0) a.info.n = cl.info.n;
    ++a.calls;
    a.ns += cl.dur;
    a.exposed += cl.exposed;
    if (cl.bytes) {
      ++a.sized;
      a.bytes += static_cast<double>(*cl.bytes);
      a.sized_ns += static_cast<double>(cl.dur);
    }
    ++a.evidence[cl.info.evidence];
    total_ns += cl.dur;
  }
  std::vector<model::CollectiveRow> table;
  double fp32_ar_exposed = 0, ag_exposed = 0;
  for (const auto& [key, a] : rows) {
    model::CollectiveRow r;
    r.kind = a.info.kind;
    if (!std::get<1>(key).empty()) r.process_group = std::get<1>(key);
    if (a.info.n > 0) r.group_size = a.info.n;
    if (a.info.dtype) r.dtype = a.info.dtype->name;
    if (a.sized > 0) r.bytes = static_cast<int64_t>(std::llround(a.bytes / static_cast<double>(a.sized)));
    r.size_bucket = a.bucket;
    r.calls_per_step = r6(static_cast<double>(a.calls) / nsteps);
    r.ms_per_step = r6(ms(a.ns) / nsteps);
    r.mean_ms = r6(ms(a.ns) / static_cast<double>(a.calls));
    if (a.sized > 0 && a.sized_ns > 0) {
      const double algbw = a.bytes / (a.sized_ns * 1e-9) / 1e9;
      r.algbw_gbps = r6(algbw);
      r.bus_factor = bus_factor(r.kind, a.info.n);
      if (r.bus_factor) {
        r.bus_factor = r6(*r.bus_factor);
        r.busbw_gbps = r6(algbw * *r.bus_factor);
        if (out.link && out.link->gbps > 0) r.peak_share = r6(*r.busbw_gbps / out.link->gbps);
      }
    }
    if (host_compute_known) {
      r.exposed_ms_per_step = r6(ms(a.exposed) / nsteps);
      r.exposed_share = a.ns > 0 ? std::optional<double>(r6(static_cast<double>(a.exposed) / static_cast<double>(a.ns))) : std::nullopt;
    }
    r.evidence = std::max_element(a.evidence.begin(), a.evidence.end(), [](const auto& x, const auto& y) {
                   return x.second < y.second;
                 })->first;
    if (host_compute_known && r.kind == "all_reduce" && r.dtype == std::optional<std::string>("float32"))
      fp32_ar_exposed += ms(a.exposed);
    if (host_compute_known && (r.kind == "all_gather" || r.kind == "reduce_scatter")) ag_exposed += ms(a.exposed);
    table.push_back(std::move(r));
  }
  std::sort(table.begin(), table.end(), [](const model::CollectiveRow& a, const model::CollectiveRow& b) {
    return a.ms_per_step != b.ms_per_step ? a.ms_per_step > b.ms_per_step : a.kind < b.kind;
  });
  out.rows_total = static_cast<int64_t>(table.size());
  const double step_ms = ms(c.total_ns) / nsteps;
  out.calls_per_step = r6(static_cast<double>(calls.size()) / nsteps);
  out.ms_per_step = r6(ms(total_ns) / nsteps);

  // Exposed, as the communication section counts it (GPU: the union of the communication kernels not covered by
  // compute kernels; the same number as communication.exposed_fraction); host: the calls' exposed parts, merged.
  Intervals exposed_iv;
  if (timing == "gpu_kernels") {
    out.exposed_ms_per_step = r6(ms(c.clipped(subtract_intervals(roles[Role::kCommunication], roles[Role::kKernel]))) / nsteps);
  } else if (host_compute_known) {
    Intervals all;
    for (const Call& cl : calls) all.push_back({cl.start, cl.start + cl.dur});
    all = intersect_intervals(merge_intervals(std::move(all)), c.windows);
    TimeNs total_exposed = 0;
    if (timing == "host_ranges") {
      total_exposed = total_length(subtract_intervals(all, host_compute(t, c.si.main_pid, c.si.main_tid)));
    } else {
      for (const Call& cl : calls) exposed_iv.push_back({cl.start + cl.dur - cl.exposed, cl.start + cl.dur});
      total_exposed = total_length(intersect_intervals(merge_intervals(std::move(exposed_iv)), c.windows));
    }
    out.exposed_ms_per_step = r6(ms(total_exposed) / nsteps);
  }
  if (out.exposed_ms_per_step) out.exposed_share = frac_or_null(*out.exposed_ms_per_step, step_ms);
  if (fp32_ar_exposed > 0) out.fp32_allreduce_exposed_share = r6(std::min(1.0, fp32_ar_exposed / nsteps / step_ms));
  if (ag_exposed > 0) out.allgather_exposed_share = r6(std::min(1.0, ag_exposed / nsteps / step_ms));

  // Small gradient-sized collectives that one larger call would replace: what they cost beyond the least one call
  // moving their bytes could take (the smallest call's duration, or their bytes at the best bandwidth seen).
  {
    double best_algbw = 0;  // GB/s of a row of the same kinds
    for (const auto& r : table)
      if ((r.kind == "all_reduce" || r.kind == "all_gather" || r.kind == "reduce_scatter") && r.algbw_gbps)
        best_algbw = std::max(best_algbw, *r.algbw_gbps);
    double n = 0, bytes = 0;
    TimeNs dur = 0, exposed = 0, min_dur = INT64_MAX;
    for (const Call& cl : calls) {
      if (!cl.bytes || *cl.bytes >= model::kSmallCollectiveBytes) continue;
      if (cl.info.kind != "all_reduce" && cl.info.kind != "all_gather" && cl.info.kind != "reduce_scatter") continue;
      n += 1;
      bytes += static_cast<double>(*cl.bytes);
      dur += cl.dur;
      exposed += cl.exposed;
      min_dur = std::min(min_dur, cl.dur);
    }
    if (n / nsteps >= 2 && best_algbw > 0 && host_compute_known) {
      model::SmallCollectives sm;
      sm.calls_per_step = r6(n / nsteps);
      sm.exposed_ms_per_step = r6(ms(exposed) / nsteps);
      // Per step, the merged call still moves the step's bytes and pays at least one call's latency.
      const double merged_ms = std::max(ms(min_dur), bytes / nsteps / (best_algbw * 1e9) * 1e3);
      sm.merged_ms_per_step = r6(merged_ms);
      const double saved = std::min(ms(exposed) / nsteps, std::max(0.0, ms(dur) / nsteps - merged_ms));
      sm.removable_share = r6(std::max(0.0, saved / step_ms));
      out.small = sm;
    }
  }
  {
    // FSDP / ZeRO-3's signature: parameters all-gathered and gradients reduce-scattered every step.
    double ag = 0, rs = 0;
    for (const auto& r : table) {
      if (r.kind == "all_gather") ag += r.calls_per_step;
      if (r.kind == "reduce_scatter") rs += r.calls_per_step;
    }
    out.sharded_pattern = ag >= 1 && rs >= 1;
  }
  for (const auto& r : table)
    if (r.peak_share && r.bytes && *r.bytes >= 1000000)
      out.best_peak_share = std::max(out.best_peak_share.value_or(0.0), *r.peak_share);

  // One line for the top row, and the most exposed rows.
  auto row_text = [&](const model::CollectiveRow& r) {
    std::string s = r.kind;
    if (r.dtype) s += " " + *r.dtype;
    if (r.bytes) s += " " + human_bytes(static_cast<double>(*r.bytes));
    s += format_printf(" x %.3g/step", r.calls_per_step);
    if (r.group_size) s += " over " + std::to_string(*r.group_size) + " ranks";
    return s;
  };
  if (!table.empty()) {
    const model::CollectiveRow& top = table.front();
    std::string s = row_text(top) + ":";
    if (top.busbw_gbps) {
      s += format_printf(" busbw %.3g GB/s", *top.busbw_gbps);
        if (top.peak_share && out.link) s += format_printf(" (%.0f%% of ", 100.0 * *top.peak_share) + out.link->name + ")";
    } else if (top.algbw_gbps) {
      s += format_printf(" algbw %.3g GB/s", *top.algbw_gbps);
    } else {
      s += format_printf(" %.3g ms/step", top.ms_per_step);
    }
    if (top.exposed_share) s += format_printf(", %.0f%% exposed", 100.0 * *top.exposed_share);
    out.summary = s;
    std::vector<const model::CollectiveRow*> by_exposed;
    for (const auto& r : table)
      if (r.exposed_ms_per_step && *r.exposed_ms_per_step > 0) by_exposed.push_back(&r);
    std::sort(by_exposed.begin(), by_exposed.end(), [](auto* a, auto* b) { return *a->exposed_ms_per_step > *b->exposed_ms_per_step; });
    std::string ex;
    for (size_t i = 0; i < by_exposed.size() && i < 3; ++i)
      ex += (i ? "; " : "") + row_text(*by_exposed[i]) + format_printf(": %.3g ms/step exposed", *by_exposed[i]->exposed_ms_per_step);
    if (!ex.empty()) out.exposed_summary = ex;
  }
  if (table.size() > model::kMaxCollectiveRows) table.resize(model::kMaxCollectiveRows);
  out.rows = std::move(table);
  if (timing != "gpu_kernels" || !out.link)
    notes.push_back(timing == "gpu_kernels" ? "no link peak: the GPU is not in the table (--gpu-spec adds its \"link\")"
                                            : "no link peak: host collectives (gloo) run over the host's network stack");
  if (out.link)
    notes.push_back("busbw from this rank's own durations, which include waiting for its peers (the job summary "
                    "splits waiting from transfer); the peak is " + out.link->name +
                    "'s: a group that spans nodes runs over the network instead");
  if (out.instances.size() < calls.size())
    notes.push_back(std::to_string(calls.size() - out.instances.size()) + " collectives beyond the first " +
                    std::to_string(out.instances.size()) + " are counted in the table but not matched across ranks");
  out.notes = std::move(notes);
  return out;
}

}  // namespace profile_train::analysis
