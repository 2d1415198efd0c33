// Byte sizes as people write them on a command line (--max-input-size, --max-memory): the one parser.
#pragma once

#include <cstdint>
#include <string_view>

#include "profile_train/common/status.h"

namespace profile_train {

// "16G", "512MiB", "1.5g", "1e9", "4096" -> bytes. K, M, G and T are binary (1024^n); a trailing "B" or "iB" is
// allowed; any case. InvalidArgument with the reason (the caller names the option) when the text is not a
// positive size that fits in 64 bits.
StatusOr<uint64_t> parse_byte_size(std::string_view text);

}  // namespace profile_train
