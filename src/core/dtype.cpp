#include "nnops/dtype.hpp"

#include <cmath>
#include <limits>

namespace nnops {
namespace {

uint32_t float_bits(float f) noexcept {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float bits_float(uint32_t u) noexcept {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

struct Format {
  int precision;      // significand bits including the implicit one
  int emin;           // exponent of the smallest normal
  double max_finite;  // largest finite value
};

Format format_of(DType t) noexcept {
  switch (t) {
    case DType::kFloat16:
      return {11, -14, 65504.0};
    case DType::kBFloat16:
      return {8, -126, 3.3895313892515355e38};
    case DType::kFloat32:
    default:
      return {24, -126, 3.4028234663852886e38};
  }
}

// Exponent of |a| (a > 0, finite): floor(log2 a).
int exponent_of(double a) noexcept {
  int e;
  std::frexp(a, &e);
  return e - 1;
}

}  // namespace

const char* dtype_name(DType t) noexcept {
  switch (t) {
    case DType::kFloat32:
      return "float32";
    case DType::kFloat16:
      return "float16";
    case DType::kBFloat16:
      return "bfloat16";
  }
  return "unknown";
}

std::optional<DType> parse_dtype(std::string_view n) noexcept {
  if (n == "float32" || n == "f32" || n == "fp32" || n == "float") return DType::kFloat32;
  if (n == "float16" || n == "f16" || n == "fp16" || n == "half") return DType::kFloat16;
  if (n == "bfloat16" || n == "bf16") return DType::kBFloat16;
  return std::nullopt;
}

float half_bits_to_float(uint16_t h) noexcept {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  const uint32_t mant = h & 0x3FFu;
  if (exp == 0) {
    // Subnormal or zero: mant * 2^-24 is exact in float.
    const float mag = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -mag : mag;
  }
  if (exp == 31) return bits_float(sign | 0x7F800000u | (mant << 13));
  return bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
}

uint16_t float_to_half_bits(float f) noexcept {
  uint32_t x = float_bits(f);
  const uint32_t sign = x & 0x80000000u;
  x ^= sign;
  uint32_t o;
  if (x >= 0x47800000u) {  // |f| >= 2^16 (always rounds to Inf), Inf or NaN
    o = x > 0x7F800000u ? (0x7E00u | ((x >> 13) & 0x3FFu)) : 0x7C00u;
  } else if (x < 0x38800000u) {  // |f| < 2^-14: result is subnormal or zero
    // NB: adding 0.5f makes the FPU round |f| to a multiple of 2^-24 (the f16 subnormal spacing) with
    // ties-to-even; the low mantissa bits of the sum are then the f16 subnormal encoding.
    o = float_bits(bits_float(x) + 0.5f) - 0x3F000000u;
  } else {
    const uint32_t mant_odd = (x >> 13) & 1u;
    x += (static_cast<uint32_t>(15 - 127) << 23) + 0xFFFu + mant_odd;  // rebias and round half to even
    o = x >> 13;  // a carry out of the mantissa bumps the exponent, up to Inf: still correct
  }
  return static_cast<uint16_t>(o | (sign >> 16));
}

float bf16_bits_to_float(uint16_t b) noexcept { return bits_float(static_cast<uint32_t>(b) << 16); }

uint16_t float_to_bf16_bits(float f) noexcept {
  const uint32_t x = float_bits(f);
  if (std::isnan(f)) return static_cast<uint16_t>((x >> 16) | 0x40u);
  return static_cast<uint16_t>((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
}

double round_to_dtype(double v, DType t) noexcept {
  if (t == DType::kFloat32) return static_cast<double>(static_cast<float>(v));
  if (!std::isfinite(v) || v == 0.0) return v;
  const Format f = format_of(t);
  const double a = std::fabs(v);
  const int e = std::max(exponent_of(a), f.emin);
  const double ulp = std::ldexp(1.0, e - (f.precision - 1));
  double r = std::nearbyint(a / ulp) * ulp;  // exact scaling; nearbyint rounds ties to even
  const double max_ulp = std::ldexp(1.0, exponent_of(f.max_finite) - (f.precision - 1));
  if (r > f.max_finite || a >= f.max_finite + 0.5 * max_ulp) r = std::numeric_limits<double>::infinity();
  return std::copysign(r, v);
}

double load_as_double(const void* data, DType t, std::size_t i) noexcept {
  switch (t) {
    case DType::kFloat32:
      return static_cast<const float*>(data)[i];
    case DType::kFloat16:
      return half_bits_to_float(static_cast<const uint16_t*>(data)[i]);
    case DType::kBFloat16:
      return bf16_bits_to_float(static_cast<const uint16_t*>(data)[i]);
  }
  return 0.0;
}

void store_from_double(void* data, DType t, std::size_t i, double v) noexcept {
  switch (t) {
    case DType::kFloat32:
      static_cast<float*>(data)[i] = static_cast<float>(v);
      return;
    // round_to_dtype gives a value exactly representable in T (NaN and Inf pass through), so the float
    // steps below are exact.
    case DType::kFloat16:
      static_cast<uint16_t*>(data)[i] = float_to_half_bits(static_cast<float>(round_to_dtype(v, t)));
      return;
    case DType::kBFloat16:
      static_cast<uint16_t*>(data)[i] = float_to_bf16_bits(static_cast<float>(round_to_dtype(v, t)));
      return;
  }
}

double ulp_of(double v, DType t) noexcept {
  if (!std::isfinite(v)) return std::numeric_limits<double>::infinity();
  const Format f = format_of(t);
  const double a = std::fabs(v);
  const int e = a == 0.0 ? f.emin : std::max(exponent_of(a), f.emin);
  return std::ldexp(1.0, e - (f.precision - 1));
}

}  // namespace nnops
