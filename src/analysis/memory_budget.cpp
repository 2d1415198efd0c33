// The memory budget (include/profile_train/analysis/memory_budget.h says what it computes and how).
#include "profile_train/analysis/memory_budget.h"
#include "profile_train/common/format.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "profile_train/analysis/memory.h"

namespace profile_train::analysis {

using namespace profile_train::model;  // the documents' types (report, job, diff, tune)

namespace {

using nlohmann::json;

// A non-negative integer below kMaxMemoryBytes at `key` of object `o`, else nullopt (bad or absent).
std::optional<int64_t> bytes_at(const json& o, const char* key) {
  if (!o.is_object() || !o.contains(key)) return std::nullopt;
  const json& v = o[key];
  if (!v.is_number_integer()) return std::nullopt;
  const int64_t b = v.get<int64_t>();
  if (b < 0 || b > kMaxMemoryBytes) return std::nullopt;
  return b;
}

std::vector<int64_t> series_at(const json& o, const char* key) {
  std::vector<int64_t> out;
  if (!o.is_object() || !o.contains(key) || !o[key].is_array()) return out;
  for (const json& v : o[key]) {
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > kMaxMemoryBytes) return {};
    out.push_back(v.get<int64_t>());
  }
  return out;
}

std::string gib(int64_t b) { return format_bytes_binary(static_cast<double>(b)); }

}  // namespace

std::optional<int64_t> memory_growth_per_step(const std::vector<int64_t>& ys) {
  if (ys.size() < 3) return std::nullopt;
  // The median step-to-step change, not a least-squares slope: one-time jumps (the optimizer's state and the
  // gradients appear during the first step, a cache fills once) must not read as a steady rise when the other
  // steps change by a few hundred bytes.
  std::vector<int64_t> d;
  size_t rises = 0;
  for (size_t q = 1; q < ys.size(); ++q) {
    d.push_back(ys[q] - ys[q - 1]);
    rises += ys[q] > ys[q - 1];
  }
  if (rises * 3 < d.size() * 2) return 0;
  std::sort(d.begin(), d.end());
  const size_t n = d.size();
  const int64_t median = n % 2 ? d[n / 2] : d[n / 2 - 1] / 2 + d[n / 2] / 2;
  return median >= kMemoryGrowthFloor ? median : 0;
}

std::optional<MemoryBudget> memory_budget_section(const json& facts, const std::optional<Device>& device) {
  if (!facts.is_object() || !facts.contains("memory") || !facts["memory"].is_object()) return std::nullopt;
  const json& m = facts["memory"];
  const auto params = bytes_at(m, "parameter_bytes");
  if (!params) return std::nullopt;
  MemoryBudget b;
  const std::string dev = m.contains("device") && m["device"].is_string() ? m["device"].get<std::string>() : "";
  const bool gpu = dev.starts_with("cuda");
  b.device = gpu ? "GPU" : "CPU";
  if (auto bs = bytes_at(m, "batch_size"); bs && *bs > 0) b.batch_size = bs;
  b.parameter_bytes = *params;
  b.gradient_bytes = bytes_at(m, "gradient_bytes");
  b.optimizer_state_bytes = bytes_at(m, "optimizer_state_bytes");
  b.static_bytes = *params + b.gradient_bytes.value_or(0) + b.optimizer_state_bytes.value_or(0);
  const json steps = m.contains("steps") && m["steps"].is_object() ? m["steps"] : json::object();
  const json gpu_facts = facts.contains("gpu") && facts["gpu"].is_object() ? facts["gpu"] : json::object();

  if (gpu) {
    const auto peaks = series_at(steps, "peak_allocated_bytes");
    if (!peaks.empty()) {
      b.peak_bytes = *std::max_element(peaks.begin(), peaks.end());
      b.peak_source = "the largest per-step torch.cuda.max_memory_allocated";
    } else if (auto p = bytes_at(gpu_facts, "memory_peak_bytes")) {
      b.peak_bytes = p;
      b.peak_source = "torch.cuda.max_memory_allocated over the run";
    }
    if (b.peak_bytes) {
      b.activation_bytes = std::max<int64_t>(0, *b.peak_bytes - b.static_bytes);
      b.activation_source = "the peak less parameters, gradients and optimizer state";
    }
    if (auto c = bytes_at(gpu_facts, "memory_total_bytes"); c && *c > 0) {
      b.capacity_bytes = c;
      b.capacity_source = "the device's total memory (torch.cuda.get_device_properties)";
    } else if (device && device->total_memory_bytes && *device->total_memory_bytes > 0) {
      b.capacity_bytes = device->total_memory_bytes;
      b.capacity_source = "the device's total memory (trace)";
    }
    if (b.capacity_bytes && b.peak_bytes) b.free_bytes = std::max<int64_t>(0, *b.capacity_bytes - *b.peak_bytes);
    b.caveat = "an estimate: the caching allocator rounds and keeps blocks (reserved above allocated), and the "
               "CUDA context's few hundred MiB are outside these counters";
  } else {
    if (auto a = bytes_at(m, "activation_saved_bytes")) {
      b.activation_bytes = a;
      b.activation_source = "the tensors the loss's autograd graph holds for backward when backward starts";
    } else if (auto h = bytes_at(m, "activation_heap_bytes")) {
      b.activation_bytes = h;
      b.activation_source = "the C heap's growth over the forward pass (mallinfo2 when the forward starts and when "
                            "backward starts, median of the measured steps; the forward's outputs included)";
    }
    if (b.activation_bytes) {
      b.peak_bytes = b.static_bytes + *b.activation_bytes;
      b.peak_source = "parameters, gradients, optimizer state and activations: a lower bound (the backward's "
                      "temporaries are not in it)";
    }
    if (auto c = bytes_at(m, "ram_total_bytes"); c && *c > 0) {
      b.capacity_bytes = c;
      const std::string src = m.contains("ram_total_source") && m["ram_total_source"].is_string()
                                  ? m["ram_total_source"].get<std::string>() : "MemTotal";
      b.capacity_source = "the RAM the process may use (" + src + ")";
      if (auto rss = bytes_at(m, "rss_peak_bytes")) {
        int64_t free = std::max<int64_t>(0, *c - *rss);
        if (auto avail = bytes_at(m, "ram_available_bytes")) free = std::min(free, *avail);
        b.free_bytes = free;
      }
    }
    b.caveat = "an estimate: the process's peak RSS (interpreter and libraries included) is what is taken as used, "
               "MemAvailable bounds the rest; other processes can take that memory";
  }
  if (b.capacity_bytes && b.peak_bytes) b.peak_fraction = double(*b.peak_bytes) / double(*b.capacity_bytes);
  if (b.peak_fraction) b.peak_fraction = std::round(*b.peak_fraction * 1e6) / 1e6;
  if (b.activation_bytes && b.batch_size && *b.activation_bytes > 0) {
    b.activation_per_sample_bytes = *b.activation_bytes / *b.batch_size;
    if (b.free_bytes && *b.activation_per_sample_bytes > 0) {
      b.samples_fit = *b.batch_size + *b.free_bytes / *b.activation_per_sample_bytes;
      b.fit = "batch " + std::to_string(*b.batch_size) + " fits with " + gib(*b.free_bytes) + " free; about " +
              format_count(*b.samples_fit) + " samples would fit (" + gib(*b.activation_per_sample_bytes) +
              " of activations per sample)";
    }
  }
  // Growth across steps.
  std::vector<int64_t> series;
  if (gpu) {
    series = series_at(steps, "allocated_at_start_bytes");
    if (!series.empty()) b.growth_source = "torch.cuda.memory_allocated at each step's start";
  } else if (series = series_at(steps, "heap_in_use_at_start_bytes"); !series.empty()) {
    b.growth_source = "the C heap's bytes in use (mallinfo2) at each step's start";
  } else if (series = series_at(steps, "rss_at_start_bytes"); !series.empty()) {
    b.growth_source = "the process's resident set at each step's start";
  }
  if (!series.empty()) {
    b.growth_per_step_bytes = memory_growth_per_step(series);
    if (!b.growth_per_step_bytes) b.growth_source.reset();
  }
  return b;
}

}  // namespace profile_train::analysis
