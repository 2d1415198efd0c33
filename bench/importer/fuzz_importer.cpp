// libFuzzer target for the trace importers: arbitrary bytes (plain or gzip) through load_trace_bytes, and
// the Kineto importer with a tiny read buffer so element restarts across refills are exercised too.
// Build and run: bench/importer/fuzz.sh (clang, -DPT_FUZZ=ON).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "io/byte_sources.h"
#include "importers/importers_internal.h"
#include "profile_train/trace/importer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace profile_train::trace;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  LoadOptions opt;
  opt.max_uncompressed_bytes = uint64_t{64} << 20;  // gzip bombs stop here
  auto a = load_trace_bytes(bytes, "fuzz-input", opt);
  if (a.ok() && a->quality.events_imported > a->quality.events_total) __builtin_trap();
  detail::MemorySource src(bytes, "fuzz-input");
  auto b = load_kineto_json(src, opt, 16 + size % 61);
  // Plain JSON through the registry and through the tiny-buffer importer must agree (gzip input is only
  // decoded by the registry, so it is excluded).
  const bool gzip = size >= 2 && data[0] == 0x1f && data[1] == 0x8b;
  if (!gzip && a.ok() && !b.ok()) __builtin_trap();
  if (!gzip && a.ok() && b.ok() && a->events.size() != b->events.size()) __builtin_trap();
  return 0;
}
