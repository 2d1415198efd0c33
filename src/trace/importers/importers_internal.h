// Built-in importers, registered by registry.cpp. Each lives in its own file.
#pragma once

#include "profile_train/trace/importer.h"

namespace profile_train::trace {

Importer make_kineto_json_importer();  // kineto_json.cpp (Kineto / PyTorch profiler Chrome-trace JSON)
Importer make_native_importer();       // native.cpp (profile-train agent capture files)

}  // namespace profile_train::trace
