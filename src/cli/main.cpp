// profile-train: profile first, find what limits the training step, recommend the cheapest fix.
#include <exception>
#include <iostream>
#include <utility>
#include <vector>

#include "commands.h"
#include "profile_train/common/status.h"

int main(int argc, char** argv) {
  using namespace profile_train;
  CLI::App app{"profile-train: diagnose what limits a PyTorch training step and recommend the cheapest fix"};
  app.set_version_flag("--version", std::string("profile-train ") + PROFILE_TRAIN_VERSION);
  app.require_subcommand(1);
  std::vector<std::pair<CLI::App*, cli::Runner>> commands;
  auto add = [&](cli::Runner (*adder)(CLI::App&)) {
    const size_t before = app.get_subcommands({}).size();
    cli::Runner runner = adder(app);
    auto subs = app.get_subcommands({});
    if (subs.size() > before) commands.emplace_back(subs.back(), std::move(runner));
  };
  add(cli::add_analyze);
  add(cli::add_run);
  add(cli::add_tune);
  add(cli::add_diff);
  add(cli::add_rules);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? kExitOk : kExitBadInput;
  }
  for (auto& [sub, runner] : commands) {
    if (sub->parsed()) {
      try {
        return runner();
      } catch (const std::exception& e) {
        std::cerr << "profile-train: internal error: " << e.what() << "\n";
        return kExitFailure;
      }
    }
  }
  return kExitBadInput;
}
