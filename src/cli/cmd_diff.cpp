#include <iostream>

#include "commands.h"
#include "profile_train/common/status.h"

namespace profile_train::cli {

Runner add_diff(CLI::App& app) {
  auto* sub = app.add_subcommand("diff", "(not implemented yet)");
  (void)sub;
  return [] {
    std::cerr << "profile-train diff: not implemented yet\n";
    return kExitFailure;
  };
}

}  // namespace profile_train::cli
