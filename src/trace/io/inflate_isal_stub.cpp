// Built without ISA-L (PT_WITH_ISAL=OFF or libisal-dev not found): gzip is decoded with zlib only.
#include "io/inflate.h"

namespace profile_train::trace::detail {

std::unique_ptr<Inflater> make_isal_inflater() { return nullptr; }

bool isal_supported() { return false; }

}  // namespace profile_train::trace::detail
