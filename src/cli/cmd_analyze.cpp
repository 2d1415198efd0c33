#include <iostream>

#include "commands.h"
#include "profile_train/common/status.h"

namespace profile_train::cli {

Runner add_analyze(CLI::App& app) {
  auto* sub = app.add_subcommand("analyze", "(not implemented yet)");
  (void)sub;
  return [] {
    std::cerr << "profile-train analyze: not implemented yet\n";
    return kExitFailure;
  };
}

}  // namespace profile_train::cli
