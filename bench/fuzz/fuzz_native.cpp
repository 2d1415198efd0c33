// libFuzzer target for the native capture reader: arbitrary bytes as a .ptrace file (through an in-memory
// file: the reader takes a path), read by load_captures and read_capture_info, then analyzed.
// Invariants: never more events imported than seen, no negative duration or drop count.
// Build and run: bench/fuzz/fuzz.sh native [SECONDS] (clang, -DPT_FUZZ=ON).
#include "fuzz_common.h"
#include "profile_train/trace/native_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace profile_train;
  const std::string path = pt_fuzz::as_file(data, size);
  trace::LoadOptions opt;
  opt.max_uncompressed_bytes = uint64_t{64} << 20;
  auto t = trace::native::load_captures({path}, opt);
  if (t.ok()) {
    if (t->quality.events_imported > t->quality.events_total) __builtin_trap();
    if (t->quality.dropped_records < 0) __builtin_trap();
    for (const auto& e : t->events)
      if (e.dur_ns < 0) __builtin_trap();
    (void)analysis::build_typed_report(*t);
  }
  (void)trace::native::read_capture_info(path);
  return 0;
}
