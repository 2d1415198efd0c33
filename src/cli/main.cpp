// profile-train: profile first, find what limits the training step, recommend the cheapest fix.
#include <cstring>
#include <exception>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "commands.h"
#include "profile_train/common/status.h"
#include "profile_train/common/version.h"

int main(int argc, char** argv) {
  using namespace profile_train;
  // `run` and `tune` wrap a command: everything after their first `--` is that command's, whatever it looks
  // like, so it is split off before CLI11 sees it (otherwise a multi-value option right before `--`, such as
  // `--rules D`, would go on taking the command's own flags).
  int parsed_argc = argc;
  std::vector<std::string> command;
  for (int i = 1; i < argc; ++i) {
    if (argv[i][0] == '-') continue;  // global options (--help, --version) come before the subcommand
    if (std::strcmp(argv[i], "run") == 0 || std::strcmp(argv[i], "tune") == 0) {
      for (int k = i + 1; k < argc; ++k) {
        if (std::strcmp(argv[k], "--") != 0) continue;
        parsed_argc = k;
        command.assign(argv + k + 1, argv + argc);
        break;
      }
    }
    break;
  }

  CLI::App app{"profile-train: diagnose what limits a PyTorch training step and recommend the cheapest fix"};
  app.set_version_flag("--version", std::string("profile-train ") + kVersion);
  app.require_subcommand(1);
  std::vector<std::pair<CLI::App*, cli::Runner>> commands;
  auto add = [&](auto&& adder) {
    const size_t before = app.get_subcommands({}).size();
    cli::Runner runner = adder(app);
    auto subs = app.get_subcommands({});
    if (subs.size() > before) commands.emplace_back(subs.back(), std::move(runner));
  };
  add(cli::add_analyze);
  add([&](CLI::App& a) { return cli::add_run(a, command); });
  add([&](CLI::App& a) { return cli::add_tune(a, command); });
  add(cli::add_diff);
  add(cli::add_rules);
  try {
    app.parse(parsed_argc, argv);
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
