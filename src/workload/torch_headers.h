// The LibTorch headers the workload's files include, precompiled once for the target (CMakeLists.txt).
#pragma once

#include <ATen/Parallel.h>
#include <ATen/Version.h>
#include <ATen/autocast_mode.h>
#include <torch/cuda.h>
#include <torch/data.h>
#include <torch/nn.h>
#include <torch/nn/functional.h>
#include <torch/optim.h>
