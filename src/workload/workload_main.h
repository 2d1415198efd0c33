// Entry point of `profile-train-workload`, kept free of LibTorch headers so main.cpp compiles fast.
#pragma once

namespace profile_train::workload {

// Parses argv, trains, prints progress and samples/s, writes --result and (when PROFILE_TRAIN_OUT is set)
// facts-<pid>.json. Returns the process exit code: 0 ok, 2 bad usage (one line on stderr), 1 failure.
int workload_main(int argc, const char* const* argv);

}  // namespace profile_train::workload
