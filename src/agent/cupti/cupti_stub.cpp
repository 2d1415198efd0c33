// Used when the build has no CUPTI (PT_WITH_CUPTI=OFF or not found): the agent records NVTX only.
#include "core/agent_internal.h"
#include "profile_train/agent/recorder.h"

namespace profile_train::agent {

namespace {
const char* kStatus = R"({"state":"disabled","reason":"this agent was built without CUPTI"})";
}

int cupti_initialize() {
  recorder_start(config_from_env());
  set_status("cupti", kStatus);
  return 0;
}

std::string cupti_status_json() { return kStatus; }

}  // namespace profile_train::agent
