// The CUPTI function table bound to libcupti.
#include "cupti/cupti_api.h"

namespace profile_train::agent::cupti {

const CuptiApi& libcupti_api() {
  static const CuptiApi api = [] {
    CuptiApi a;
    a.get_result_string = cuptiGetResultString;
    a.get_version = cuptiGetVersion;
    a.get_callback_name = cuptiGetCallbackName;
    a.subscribe = cuptiSubscribe;
    a.unsubscribe = cuptiUnsubscribe;
    a.enable_callback = cuptiEnableCallback;
    a.set_thread_id_type = cuptiSetThreadIdType;
    a.register_timestamp_callback = cuptiActivityRegisterTimestampCallback;
    a.register_callbacks = cuptiActivityRegisterCallbacks;
    a.activity_enable = cuptiActivityEnable;
    a.activity_disable = cuptiActivityDisable;
    a.get_next_record = cuptiActivityGetNextRecord;
    a.get_num_dropped_records = cuptiActivityGetNumDroppedRecords;
    a.flush_all = cuptiActivityFlushAll;
    return a;
  }();
  return api;
}

}  // namespace profile_train::agent::cupti
