#include <iostream>

#include "commands.h"
#include "profile_train/common/status.h"

namespace profile_train::cli {

Runner add_rules(CLI::App& app) {
  auto* sub = app.add_subcommand("rules", "(not implemented yet)");
  (void)sub;
  return [] {
    std::cerr << "profile-train rules: not implemented yet\n";
    return kExitFailure;
  };
}

}  // namespace profile_train::cli
