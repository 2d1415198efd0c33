// profile-train: profile first, find what limits the training step, recommend the cheapest fix.
#include <signal.h>

#include <cstring>
#include <exception>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "commands.h"
#include "profile_train/common/status.h"
#include "profile_train/common/terminal.h"
#include "profile_train/common/version.h"

int main(int argc, char** argv) {
  using namespace profile_train;
  // Over a file-size limit (`ulimit -f`) a write must fail with EFBIG ("File too large", exit 2, the previous
  // file intact), not kill us with SIGXFSZ halfway through and leave the temporary file behind. With stdout
  // closed early (`| head`), printing must stop, not kill us with SIGPIPE before the files are written: the
  // failed writes to std::cout only set its badbit. The commands we launch get both back at SIG_DFL (spawn.cpp).
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGXFSZ, &ignore, nullptr);
  ::sigaction(SIGPIPE, &ignore, nullptr);
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
  const cli::Io io = cli::standard_io();
  add([&](CLI::App& a) { return cli::add_analyze(a, io); });
  add([&](CLI::App& a) { return cli::add_run(a, command, io); });
  add([&](CLI::App& a) { return cli::add_tune(a, command, io); });
  add([&](CLI::App& a) { return cli::add_diff(a, io); });
  add([&](CLI::App& a) { return cli::add_rules(a, io); });
  add([&](CLI::App& a) { return cli::add_mcp(a, io); });
  try {
    app.parse(parsed_argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version print as CLI11 does; every usage error is one line, its echoed values made inert
    // (CLI11's own texts, such as "Could not convert: --kill-after = VALUE", quote the value raw).
    if (e.get_exit_code() == 0) return app.exit(e) == 0 ? kExitOk : kExitBadInput;
    std::cout.flush();
    std::cerr << "profile-train: " << terminal_safe(e.what()) << " (--help for usage)\n";
    return kExitBadInput;
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
