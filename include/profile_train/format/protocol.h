// The strings shared by `profile-train run`, the capture agent (C++) and the Python shim
// (src/agent/python/profile_train_shim.py): environment variables, NVTX control marks, the step range prefix
// and the names of the files in the capture folder. Defined here once; the shim cannot include a header, so
// tests/agent/protocol_test.cpp checks that its source uses exactly the names marked for it below.
// It lives in format/ (the contracts, below every room: common/knobs.h and the workload include it too); the
// namespace keeps the name its users spell.
#pragma once

#include <string_view>

namespace profile_train::agent::protocol {

// ---- environment (set by `run`, read by the agent and / or the shim) ----------------------------------------
inline constexpr const char* kEnvOut = "PROFILE_TRAIN_OUT";                  // capture folder
inline constexpr const char* kEnvWarmupSteps = "PROFILE_TRAIN_WARMUP_STEPS";  // steps before recording starts
inline constexpr const char* kEnvSteps = "PROFILE_TRAIN_STEPS";              // steps recorded (0: no limit)
inline constexpr const char* kEnvStopAfterSteps = "PROFILE_TRAIN_STOP_AFTER_STEPS";  // "1": SystemExit(0) after
inline constexpr const char* kEnvModuleRanges = "PROFILE_TRAIN_MODULE_RANGES";  // depth of nn.Module ranges
inline constexpr const char* kEnvShim = "PROFILE_TRAIN_SHIM";                // "0": the shim installs nothing
inline constexpr const char* kEnvBufferMb = "PROFILE_TRAIN_BUFFER_MB";       // agent record buffers, MiB
inline constexpr const char* kEnvFlushMs = "PROFILE_TRAIN_FLUSH_MS";         // agent writer period, ms
// The tuner's knob overrides, a JSON object override_key -> value (the keys: common/knobs.h).
inline constexpr const char* kEnvOverrides = "PROFILE_TRAIN_OVERRIDES";
// A JSON file with the same object (or {"overrides": {...}}, the file `tune` writes), read when
// PROFILE_TRAIN_OVERRIDES is unset: `profile-train run --apply FILE` sets it; launchers that take no wrapper set it
// themselves.
inline constexpr const char* kEnvApply = "PROFILE_TRAIN_APPLY";
// "0": the shim records no collective (facts.collectives; on by default).
inline constexpr const char* kEnvCollectives = "PROFILE_TRAIN_COLLECTIVES";

struct EnvVar {
  const char* name;
  bool read_by_agent;
  bool read_by_shim;
};
inline constexpr EnvVar kEnvVars[] = {
    {kEnvOut, true, true},           {kEnvWarmupSteps, true, true},   {kEnvSteps, true, true},
    {kEnvStopAfterSteps, false, true}, {kEnvModuleRanges, false, true}, {kEnvShim, false, true},
    {kEnvBufferMb, true, false},     {kEnvFlushMs, true, false},      {kEnvOverrides, false, true},
    {kEnvApply, false, true},        {kEnvCollectives, false, true},
};

// ---- NVTX control marks: marks whose text starts with kControlPrefix steer the agent and are not recorded ----
inline constexpr const char* kControlPrefix = "profile_train:";
inline constexpr const char* kMarkFlush = "profile_train:flush";                 // flush now (worker exit)
inline constexpr const char* kMarkCaptureStart = "profile_train:capture_start";  // start recording
inline constexpr const char* kMarkCaptureStop = "profile_train:capture_stop";    // stop recording
inline constexpr const char* kMarkDiscardNextPop = "profile_train:discard_next_pop";  // drop the thread's next pop
inline constexpr const char* kMarkFinalize = "profile_train:finalize";  // final flush + status (Python exit)
inline constexpr const char* kMarkProbe = "profile_train:probe";  // ignored: the shim checks that NVTX works

struct ControlMark {
  const char* text;
  bool sent_by_shim;
};
inline constexpr ControlMark kControlMarks[] = {
    {kMarkFlush, true},    {kMarkCaptureStart, false}, {kMarkCaptureStop, true},
    {kMarkDiscardNextPop, true}, {kMarkFinalize, true},  {kMarkProbe, true},
};

// ---- ranges and files -------------------------------------------------------------------------------------
// A range whose name starts with this is one training step (the shim pushes them; the agent's capture window
// counts them).
inline constexpr std::string_view kStepRangePrefix = "ProfilerStep#";
// The agent's capture files: <PROFILE_TRAIN_OUT>/pt-<pid>-<n>.ptrace.
inline constexpr std::string_view kCaptureFilePrefix = "pt-";
inline constexpr std::string_view kCaptureFileExtension = ".ptrace";
// The shim's configuration facts: <PROFILE_TRAIN_OUT>/facts-<pid>.json.
inline constexpr std::string_view kFactsFilePrefix = "facts-";
inline constexpr std::string_view kFactsFileExtension = ".json";

}  // namespace profile_train::agent::protocol
