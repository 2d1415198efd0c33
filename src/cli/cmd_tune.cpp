#include <iostream>

#include "commands.h"
#include "profile_train/common/status.h"

namespace profile_train::cli {

Runner add_tune(CLI::App& app) {
  auto* sub = app.add_subcommand("tune", "(not implemented yet)");
  (void)sub;
  return [] {
    std::cerr << "profile-train tune: not implemented yet\n";
    return kExitFailure;
  };
}

}  // namespace profile_train::cli
