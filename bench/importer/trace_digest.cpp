// Prints a digest of everything load_trace put into the model (every event and memory sample field, the
// strings, devices, meta, data quality and facts), or the error line, for each file. Two builds that print
// the same digests imported the same traces: the check behind an importer optimisation that must not change
// what is imported. With --dump the canonical text itself is printed instead of its hash. With --chunk BYTES
// the files (plain JSON) go straight to the Kineto importer with that read-buffer size, so that elements
// straddle buffer refills everywhere (tiny values are slow on big files).
// Usage: pt_trace_digest [--dump] [--chunk BYTES] FILE... ; exit code 0 (errors are part of the output).
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "io/byte_sources.h"
#include "importers/importers_internal.h"
#include "profile_train/trace/importer.h"

namespace {

using namespace profile_train;

// FNV-1a over the canonical text, 64 bits.
struct Digest {
  uint64_t h = 1469598103934665603ull;
  std::string* dump = nullptr;
  void add(std::string_view s) {
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
    if (dump != nullptr) dump->append(s);
  }
  void num(long double v) {
    char b[64];
    std::snprintf(b, sizeof b, "%.9Lg ", v);
    add(b);
  }
  void i(int64_t v) {
    char b[32];
    std::snprintf(b, sizeof b, "%lld ", static_cast<long long>(v));
    add(b);
  }
  void str(std::string_view s) {
    i(static_cast<int64_t>(s.size()));
    add(s);
    add(" ");
  }
};

void digest_trace(const trace::Trace& t, Digest& d) {
  d.add("strings ");
  d.i(static_cast<int64_t>(t.strings.size()));
  for (size_t k = 0; k < t.strings.size(); ++k) d.str(t.strings.get(static_cast<trace::StringId>(k)));
  d.add("\nevents ");
  d.i(static_cast<int64_t>(t.events.size()));
  for (const auto& e : t.events) {
    d.add("\n");
    for (int64_t v : {e.start_ns, e.dur_ns, e.pid, e.tid, e.correlation, e.external_id, e.bytes,
                      static_cast<int64_t>(e.name), static_cast<int64_t>(e.cat), static_cast<int64_t>(e.copy_kind),
                      static_cast<int64_t>(e.src_mem), static_cast<int64_t>(e.dst_mem),
                      static_cast<int64_t>(e.sync_kind), static_cast<int64_t>(e.is_gpu),
                      static_cast<int64_t>(e.device), static_cast<int64_t>(e.grid_blocks),
                      static_cast<int64_t>(e.block_threads), static_cast<int64_t>(e.registers_per_thread),
                      static_cast<int64_t>(e.shared_mem_bytes)})
      d.i(v);
    d.num(e.blocks_per_sm);
    d.num(e.occupancy_pct);
  }
  d.add("\nmemory ");
  for (const auto& m : t.memory) {
    for (int64_t v : {m.ts_ns, static_cast<int64_t>(m.device_type), static_cast<int64_t>(m.device_id), m.bytes_delta,
                      m.total_allocated, m.total_reserved})
      d.i(v);
    d.add("\n");
  }
  d.add("devices ");
  for (const auto& v : t.devices) {
    d.i(v.id);
    d.str(v.name);
    d.str(v.vendor);
    for (int64_t x : {int64_t{v.compute_major}, int64_t{v.compute_minor}, int64_t{v.num_sms},
                      int64_t{v.max_threads_per_sm}, int64_t{v.max_threads_per_block}, int64_t{v.regs_per_sm},
                      v.shared_mem_per_sm, v.total_memory_bytes})
      d.i(x);
    d.add("\n");
  }
  const auto& m = t.meta;
  d.add("meta ");
  for (const auto& f : m.source_files) d.str(f);
  d.str(m.format);
  d.str(m.format_version);
  d.str(m.producer);
  for (int64_t v : {m.base_time_ns, int64_t{m.rank}, int64_t{m.world_size}, m.main_pid,
                    int64_t{m.gpu_capture_attempted}})
    d.i(v);
  d.str(m.distributed_backend);
  d.str(m.gpu_capture_status);
  for (const auto& [k, v] : m.versions) {
    d.str(k);
    d.str(v);
  }
  for (const auto& [k, v] : m.thread_names) {
    d.i(k.first);
    d.i(k.second);
    d.str(v);
  }
  for (const auto& [k, v] : m.process_names) {
    d.i(k);
    d.str(v);
  }
  const auto& q = t.quality;
  d.add("\nquality ");
  for (int64_t v : {q.events_total, q.events_imported, q.malformed_events, q.unknown_categories,
                    q.flow_events_skipped, q.negative_durations, q.clock_anomalies, q.unmatched_correlations,
                    q.dropped_records, q.agent_internal_errors, int64_t{q.missing_device_properties}})
    d.i(v);
  for (const auto& n : q.notes) d.str(n);
  d.add("\nfacts ");
  d.str(t.facts.dump());
  d.add("\n");
}

}  // namespace

int main(int argc, char** argv) {
  bool dump = false;
  size_t chunk = 0;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--dump") == 0) {
      dump = true;
      continue;
    }
    if (std::strcmp(argv[i], "--chunk") == 0 && i + 1 < argc) {
      chunk = std::stoul(argv[++i]);
      continue;
    }
    StatusOr<trace::Trace> tr = Internal("not loaded");
    if (chunk == 0) {
      tr = trace::load_trace(argv[i]);
    } else {
      std::ifstream f(argv[i], std::ios::binary);
      std::stringstream ss;
      ss << f.rdbuf();
      const std::string bytes = ss.str();
      trace::detail::MemorySource src(bytes, argv[i]);
      tr = trace::load_kineto_json(src, {}, chunk);
    }
    std::string text;
    Digest d;
    if (dump) d.dump = &text;
    if (!tr.ok()) d.add("ERROR " + std::to_string(tr.status().exit_code()) + " " + tr.status().message());
    else digest_trace(*tr, d);
    if (dump) std::printf("%s\n", text.c_str());
    else if (!tr.ok()) std::printf("%016llx %s %s\n", static_cast<unsigned long long>(d.h), argv[i], tr.status().message().c_str());
    else std::printf("%016llx %s\n", static_cast<unsigned long long>(d.h), argv[i]);
  }
  return 0;
}
