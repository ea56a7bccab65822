// Storage data types and exact scalar conversions.
//
// float16 and bfloat16 are storage formats only: nnops widens them to float32 (exactly) to compute and
// rounds back with round-to-nearest-even. The scalar conversions here are the definition the SIMD
// kernels are tested against.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

namespace nnops {

enum class DType : int {
  kFloat32 = 0,
  kFloat16 = 1,
  kBFloat16 = 2,
};

/// Bytes per element.
constexpr std::size_t dtype_size(DType t) noexcept { return t == DType::kFloat32 ? 4 : 2; }

/// "float32", "float16", "bfloat16".
const char* dtype_name(DType t) noexcept;

/// Parses "float32"/"f32"/"fp32", "float16"/"f16"/"fp16"/"half", "bfloat16"/"bf16".
std::optional<DType> parse_dtype(std::string_view name) noexcept;

/// Exact widening of IEEE binary16 bits to float (every value, including subnormals, Inf and NaN).
float half_bits_to_float(uint16_t h) noexcept;
/// float -> binary16 bits, round-to-nearest-even; overflow gives Inf, NaN stays a (quiet) NaN.
uint16_t float_to_half_bits(float f) noexcept;
/// Exact widening of bfloat16 bits to float.
float bf16_bits_to_float(uint16_t b) noexcept;
/// float -> bfloat16 bits, round-to-nearest-even; NaN stays a (quiet) NaN.
uint16_t float_to_bf16_bits(float f) noexcept;

/// Rounds a double to the nearest value of `t` (ties to even, one rounding, no double rounding through
/// float32) and returns it as a double. Used by the float64 references and the tests.
double round_to_dtype(double v, DType t) noexcept;

/// Reads element `i` of a buffer of dtype `t` as a double (exact).
double load_as_double(const void* data, DType t, std::size_t i) noexcept;
/// Stores `v` rounded to `t` (round-to-nearest-even, single rounding) into element `i`.
void store_from_double(void* data, DType t, std::size_t i, double v) noexcept;

/// Distance between `v` and the next larger-magnitude value of `t` at v's binade (the unit in the last
/// place). For |v| below the smallest normal it is the subnormal spacing. Inf/NaN give +Inf.
double ulp_of(double v, DType t) noexcept;

}  // namespace nnops
