// Built-in importers, registered by registry.cpp. Each lives in its own file.
#pragma once

#include "profile_train/trace/importer.h"

namespace profile_train::trace {

Importer make_kineto_json_importer();  // kineto_json.cpp (Kineto / PyTorch profiler Chrome-trace JSON)
Importer make_native_importer();       // native.cpp (profile-train agent capture files)

// How many threads the Kineto importer parses a plain stream of `size` bytes with (kineto_split.cpp); < 2: one.
// The registry asks too: a stream parsed in parts is not also read ahead.
size_t parallel_parse_parts(const LoadOptions& options, uint64_t size);

// The Kineto importer with an explicit read-buffer size (tests use tiny buffers to exercise refills).
StatusOr<Trace> load_kineto_json(ByteSource& source, const LoadOptions& options, size_t chunk_bytes);

}  // namespace profile_train::trace
