// Where a command writes. Every command takes one: main() gives the process's streams, tests give string
// streams and run the command in their own process (tests/cli/cli_inprocess_test.cpp).
#pragma once

#include <unistd.h>

#include <iostream>

#include "profile_train/common/terminal.h"

namespace profile_train::cli {

// `out`: results (summaries, tables, explain); `err`: the one-line errors, notes and progress. `color`: `out`
// is a terminal that takes colours; `err_tty`: `err` is a terminal (progress updates one line in place there,
// else a line every few seconds).
struct Io {
  std::ostream* out = &std::cout;
  std::ostream* err = &std::cerr;
  bool color = false;
  bool err_tty = false;
};
inline Io standard_io() { return Io{&std::cout, &std::cerr, use_color(1), ::isatty(2) == 1}; }

}  // namespace profile_train::cli
