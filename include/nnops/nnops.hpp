// nnops: CANN ops-nn operators on ordinary CPUs. Include this for the whole C++ API.
#pragma once

#include "nnops/context.hpp"
#include "nnops/dtype.hpp"
#include "nnops/isa.hpp"
#include "nnops/ops/group_normalization_grad.hpp"
#include "nnops/ops/inplace_apply_power_sign.hpp"
#include "nnops/status.hpp"
#include "nnops/tensor_view.hpp"
#include "nnops/version.hpp"
