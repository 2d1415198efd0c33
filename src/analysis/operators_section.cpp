// report.json's operators section: where the GPU time, the host time and the GPU idle time go, by operator
// and module, and the operator carrying the most of each removable kind of time.
#include <algorithm>
#include <map>
#include <string_view>

#include "report_context.h"

namespace profile_train::analysis {

using namespace profile_train::model;  // the documents' types (report, job, diff, tune)

namespace {

constexpr size_t kTop = 10;  // rows per list

// The operators with key(row) > 0, most first (ties by name).
template <class Key>
std::vector<const OperatorRow*> ranked(const OperatorAttribution& a, Key key) {
  std::vector<const OperatorRow*> rows;
  for (const auto& r : a.operators)
    if (key(r) > 0) rows.push_back(&r);
  std::sort(rows.begin(), rows.end(), [&](const OperatorRow* x, const OperatorRow* y) {
    return key(*x) != key(*y) ? key(*x) > key(*y) : x->name < y->name;
  });
  return rows;
}

template <class Row, class Key, class Make>
std::vector<Row> top_rows(const OperatorAttribution& a, Key key, Make make) {
  std::vector<Row> out;
  const auto rows = ranked(a, key);
  for (size_t i = 0; i < rows.size() && i < kTop; ++i) out.push_back(make(*rows[i]));
  return out;
}

constexpr size_t kTopShapes = 3;  // input signature groups per operator row

// The leading input signature groups of `r` by key (ties: the other time, then the shapes text), per step;
// nothing when the trace records no inputs.
template <class Key>
void leading_shapes(const OperatorRow& r, double nsteps, Key key, std::optional<std::vector<InputShapeGroup>>* out,
                    std::optional<int64_t>* groups) {
  if (r.shapes.empty()) return;
  // Groups that differ only in their scalar arguments (OpInputs::concrete) are one group here.
  std::map<std::pair<std::string_view, std::string_view>, OperatorShapeRow> merged;
  for (const auto& s : r.shapes) {
    OperatorShapeRow& m = merged[{s.dims, s.types}];
    if (m.calls == 0 && m.gpu_activities == 0 && m.host_self_ns == 0 && m.gpu_ns == 0) {
      m.dims = s.dims;
      m.types = s.types;
    }
    m.gpu_ns += s.gpu_ns;
    m.gpu_activities += s.gpu_activities;
    m.launching_calls += s.launching_calls;
    m.host_self_ns += s.host_self_ns;
    m.calls += s.calls;
  }
  std::vector<const OperatorShapeRow*> rows;
  for (const auto& [k, s] : merged) rows.push_back(&s);
  std::sort(rows.begin(), rows.end(), [&](const OperatorShapeRow* x, const OperatorShapeRow* y) {
    if (key(*x) != key(*y)) return key(*x) > key(*y);
    if (x->gpu_ns + x->host_self_ns != y->gpu_ns + y->host_self_ns)
      return x->gpu_ns + x->host_self_ns > y->gpu_ns + y->host_self_ns;
    return x->dims != y->dims ? x->dims < y->dims : x->types < y->types;
  });
  auto text = [](const std::string& s) { return s.empty() ? std::nullopt : std::optional<std::string>(s); };
  auto per_step_ms = [&](TimeNs v) { return r6(ms(v) / nsteps); };
  out->emplace();
  for (size_t i = 0; i < rows.size() && i < kTopShapes; ++i)
    (*out)->push_back({text(rows[i]->dims), text(rows[i]->types), r6(rows[i]->calls / nsteps),
                       per_step_ms(rows[i]->gpu_ns), per_step_ms(rows[i]->host_self_ns)});
  *groups = static_cast<int64_t>(rows.size());
}

}  // namespace

Operators operators_section(const Ctx& c, const OperatorAttribution& a) {
  Operators o;
  if (c.total_ns <= 0) return o;
  const double n = c.nsteps, total = static_cast<double>(c.total_ns), gpu = static_cast<double>(a.gpu_ns);
  auto per_step_ms = [&](TimeNs v) { return r6(ms(v) / n); };
  if (a.gpu_ns > 0 && a.has_operators) {
    o.attributed_fraction = r6(double(a.gpu_attributed_ns) / gpu);
    o.unattributed_ms_per_step = per_step_ms(a.gpu_ns - a.gpu_attributed_ns);
  }
  if (a.gpu_ns > 0) o.in_module_fraction = r6(double(a.gpu_in_module_ns) / gpu);
  const auto gpu_key = [](const OperatorRow& r) { return r.gpu_ns; };
  const auto host_key = [](const OperatorRow& r) { return r.host_self_ns; };
  const auto idle_key = [](const OperatorRow& r) { return r.idle_ns; };
  o.top_by_gpu_time = top_rows<OperatorGpuRow>(a, gpu_key, [&](const OperatorRow& r) {
    OperatorGpuRow row;
    row.name = r.name;
    row.gpu_ms_per_step = per_step_ms(r.gpu_ns);
    row.gpu_share = frac_or_null(double(r.gpu_ns), gpu);
    row.calls_per_step = r6(r.launching_calls / n);
    if (r.launching_calls) row.gpu_activities_per_call = r6(double(r.gpu_activities) / r.launching_calls);
    row.host_self_ms_per_step = per_step_ms(r.host_self_ns);
    leading_shapes(r, n, [](const OperatorShapeRow& s) { return s.gpu_ns; }, &row.input_shapes,
                   &row.input_shape_groups);
    return row;
  });
  o.top_by_host_time = top_rows<OperatorHostRow>(a, host_key, [&](const OperatorRow& r) {
    OperatorHostRow row;
    row.name = r.name;
    row.host_self_ms_per_step = per_step_ms(r.host_self_ns);
    row.host_share = r6(double(r.host_self_ns) / total);
    row.calls_per_step = r6(r.calls / n);
    row.gpu_ms_per_step = per_step_ms(r.gpu_ns);
    leading_shapes(r, n, [](const OperatorShapeRow& s) { return s.host_self_ns; }, &row.input_shapes,
                   &row.input_shape_groups);
    return row;
  });
  const double idle = static_cast<double>(a.idle_ns);
  o.during_gpu_idle = top_rows<OperatorIdleRow>(a, idle_key, [&](const OperatorRow& r) {
    return OperatorIdleRow{r.name, per_step_ms(r.idle_ns), frac_or_null(double(r.idle_ns), idle)};
  });
  std::vector<const ModuleRow*> mods;
  for (const auto& m : a.modules) mods.push_back(&m);
  std::sort(mods.begin(), mods.end(), [](const ModuleRow* x, const ModuleRow* y) {
    return x->gpu_ns != y->gpu_ns ? x->gpu_ns > y->gpu_ns : x->name < y->name;
  });
  for (size_t i = 0; i < mods.size() && i < kTop; ++i)
    o.modules.push_back({mods[i]->name, per_step_ms(mods[i]->gpu_ns), frac_or_null(double(mods[i]->gpu_ns), gpu),
                         a.has_backward_modules ? std::optional<double>(per_step_ms(mods[i]->backward_ns))
                                                : std::nullopt});
  // The operator (and module) carrying the most of each removable kind of time, for the rules' evidence.
  auto lead = [&](auto key, double denom) -> std::optional<OperatorLead> {
    const auto rows = ranked(a, key);
    if (rows.empty() || denom <= 0) return std::nullopt;
    return OperatorLead{rows.front()->name, r6(double(key(*rows.front())) / denom)};
  };
  if (const auto fp32 = lead([](const OperatorRow& r) { return r.fp32_ns; }, gpu)) {
    const ModuleRow* best = nullptr;
    for (const auto& m : a.modules)
      if (m.fp32_ns > 0 && (best == nullptr || m.fp32_ns > best->fp32_ns)) best = &m;
    o.fp32 = Fp32Lead{*fp32, best ? std::optional<std::string>(best->name) : std::nullopt};
  }
  o.conv = lead([](const OperatorRow& r) { return r.conv_ns; }, gpu);
  o.idle = lead(idle_key, idle);
  TimeNs h2d_total = 0;
  for (const auto& r : a.operators) h2d_total += r.h2d_ns;
  o.h2d = lead([](const OperatorRow& r) { return r.h2d_ns; }, double(h2d_total));
  if (!c.idx.has_gpu_activity && a.has_operators) {
    // On a CPU the operators' self time is the compute itself (with a GPU it is launch overhead).
    TimeNs mmconv = 0, host = 0;
    for (const auto& r : a.operators) {
      host += r.host_self_ns;
      if (is_cpu_matmul_conv_op(r.name)) mmconv += r.host_self_ns;
    }
    if (host > 0) o.cpu_matmul_conv_fraction = r6(std::min(1.0, double(mmconv) / total));
  }
  return o;
}

}  // namespace profile_train::analysis
