// nnops: CANN ops-nn operators on ordinary CPUs. Include this for the whole C++ API.
#pragma once

#include "nnops/context.hpp"
#include "nnops/dtype.hpp"
#include "nnops/isa.hpp"
#include "nnops/ops/all.hpp"  // every operator's C++ API (generated from src/ops/op_list.inc)
#include "nnops/status.hpp"
#include "nnops/tensor_view.hpp"
#include "nnops/version.hpp"
