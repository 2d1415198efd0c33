// One small unit per subcommand: add_X registers X's options on `app` (parsing) and returns the runner that
// executes it (running). main() picks the runner of the parsed subcommand.
#pragma once

#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "profile_train/common/status.h"
#include "profile_train/common/terminal.h"
#include "io.h"

namespace profile_train::cli {

using Runner = std::function<int()>;

// A count or a number of seconds that must be >= 0. Unlike CLI::NonNegativeNumber, whose message spells out
// the range up to the largest double (300 digits), the message is short; the value is echoed by CLI11 and
// made inert by main().
inline CLI::Validator non_negative() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        double v = 0;
        if (!CLI::detail::lexical_cast(value, v) || !(v >= 0)) return "must be a number >= 0, not '" + value + "'";
        return std::string();
      },
      "NUMBER >= 0", "NonNegative");
}

// Each command writes only to its Io (io.h); main() gives standard_io().
Runner add_analyze(CLI::App& app, Io io);  // cmd_analyze.cpp
Runner add_rules(CLI::App& app, Io io);  // cmd_rules.cpp
Runner add_diff(CLI::App& app, Io io);   // cmd_diff.cpp
Runner add_mcp(CLI::App& app, Io io);    // cmd_mcp.cpp: the MCP server (mcp_server.h)
// `command`: the arguments after the first `--` of the command line (main() splits them off before parsing:
// they belong to the wrapped command, never to our options).
Runner add_run(CLI::App& app, std::vector<std::string> command, Io io);   // cmd_run.cpp
Runner add_tune(CLI::App& app, std::vector<std::string> command, Io io);  // cmd_tune.cpp

// What `run` checks before it launches anything (options, --apply, --out, rules, --gpu-spec, --perfetto, the
// agent, the command), in this process: `args` are run's arguments (after "run", the command after "--"). The
// status's exit code is the one `run` would end with. `tune` checks its trial command this way.
Status validate_run_args(const std::vector<std::string>& args);  // cmd_run.cpp

}  // namespace profile_train::cli
