#include <iostream>

#include "commands.h"
#include "profile_train/common/status.h"

namespace profile_train::cli {

Runner add_run(CLI::App& app) {
  auto* sub = app.add_subcommand("run", "(not implemented yet)");
  (void)sub;
  return [] {
    std::cerr << "profile-train run: not implemented yet\n";
    return kExitFailure;
  };
}

}  // namespace profile_train::cli
