// The analyzers behind build_typed_report(): small stateless functions over a trace::Trace, one concern and one
// header each (included below). Public so that tests can call one analyzer on its own.
//
// Units: times are integer nanoseconds (trace clock) unless a name says otherwise; fractions are 0..1.
// Nothing here owns the trace; every result is plain data, copied out.
#pragma once

#include "profile_train/analysis/intervals.h"
#include "profile_train/analysis/classify.h"
#include "profile_train/analysis/steps.h"
#include "profile_train/analysis/steady_state.h"
#include "profile_train/analysis/phases.h"
#include "profile_train/analysis/breakdown.h"
#include "profile_train/analysis/idle.h"
#include "profile_train/analysis/host_activity.h"
#include "profile_train/analysis/operators.h"
#include "profile_train/analysis/verdict.h"
