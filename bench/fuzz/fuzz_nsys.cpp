// libFuzzer target for the Nsight Systems SQLite importer: arbitrary bytes as an export, read from memory
// (sqlite3_deserialize) and, for every other input, from a file (the path load_trace_set takes), then analyzed.
// Invariants: never more events imported than rows seen, no negative duration, ranks 0..n-1 when split, both
// ways of reading agree.
// Build and run: bench/fuzz/fuzz.sh nsys [SECONDS] (clang, -DPT_FUZZ=ON, libsqlite3-dev).
#include "fuzz_common.h"
#include "nsys/nsys_importer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace profile_train;
  trace::LoadOptions opt;
  opt.max_uncompressed_bytes = uint64_t{64} << 20;
  opt.max_load_seconds = 5;  // a hostile schema's query is interrupted, not a fuzzer timeout
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto a = trace::nsys::load_export_bytes(bytes, "fuzz-input", opt);
  if (a.ok()) {
    if (a->empty()) __builtin_trap();
    for (size_t r = 0; r < a->size(); ++r) {
      const trace::Trace& t = (*a)[r];
      if (t.quality.events_imported > t.quality.events_total) __builtin_trap();
      if (a->size() > 1 && t.meta.rank != static_cast<int32_t>(r)) __builtin_trap();
      for (const auto& e : t.events)
        if (e.dur_ns < 0) __builtin_trap();
      (void)analysis::build_typed_report(t);
    }
  }
  if (size % 2 == 1) {
    auto b = trace::load_trace_set(pt_fuzz::as_file(data, size), opt);
    if (a.ok() && b.ok() && a->size() != b->size()) __builtin_trap();
  }
  return 0;
}
