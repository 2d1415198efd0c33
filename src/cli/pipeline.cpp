#include "pipeline.h"

#include <iostream>

#include "profile_train/common/status.h"

namespace profile_train::cli {

int report_trace(const trace::Trace&, const OutputOptions&, nlohmann::json*) {
  std::cerr << "profile-train: analysis pipeline not implemented yet\n";
  return kExitFailure;
}

}  // namespace profile_train::cli
