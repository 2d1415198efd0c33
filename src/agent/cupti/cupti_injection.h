// CUPTI activity capture over a CuptiApi table (cupti_api.h): libcupti's in the injected library, a fake in
// unit tests. Not installed; only the agent's CUPTI folder and its tests include it.
#pragma once

#include <cstdint>

#include "cupti/cupti_api.h"

namespace profile_train::agent::cupti {

// Subscribes, registers the buffer callbacks and enables the activity kinds through `api`; translated records
// go to the recorder (which must be started). Once per process: later calls return the first result. 1 if
// CUPTI records, 0 if it was disabled (the reason is in the capture status, "cupti"). Never throws.
int start_capture(const CuptiApi& api);

// Counters of the buffer path (for tests; the capture status carries records_dropped).
struct CaptureStats {
  uint64_t buffers_requested = 0;   // handed to CUPTI
  uint64_t buffers_returned = 0;    // handed back by CUPTI (buffer completed) and freed
  uint64_t records_translated = 0;  // became a record or a device's properties
  uint64_t records_ignored = 0;     // kinds we do not consume
  uint64_t records_dropped = 0;     // CUPTI's own drops (cuptiActivityGetNumDroppedRecords)
};
CaptureStats capture_stats();

}  // namespace profile_train::agent::cupti
