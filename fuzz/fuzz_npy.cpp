// libFuzzer target: the .npy reader on arbitrary bytes.
//
// parse_npy is pure (it reads only [data, data + size)), so any input must give either an error Status
// with a one-line message or an array whose size agrees with its header. Checked here besides what
// ASan/UBSan catch:
//   - success: numel is the product of the shape, the data holds numel * element-size bytes, the rank is
//     at most kMaxRank, and parsing the same bytes again gives the same array (no hidden state);
//   - the header parser alone (parse_npy_header) agrees with the full parser about the header;
//   - failure: the message is non-empty and one line;
//   - a file written back with npy_preamble + the decoded data parses to the same array (round trip).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "tools/cli/npy.hpp"

namespace {

void require(bool ok) {
  if (!ok) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace nnops;
  using namespace nnops::cli;
  NpyArray a;
  const Status s = parse_npy(data, size, &a);
  NpyHeader h;
  const Status hs = parse_npy_header(data, size, &h);
  if (!s) {
    require(!s.message().empty());
    require(s.message().find('\n') == std::string::npos);
    return 0;
  }
  require(hs.is_ok());
  require(a.shape.size() <= static_cast<std::size_t>(kMaxRank));
  int64_t n = 1;
  for (int64_t d : a.shape) {
    require(d >= 0);
    require(!__builtin_mul_overflow(n, d, &n));
  }
  require(n == a.numel && h.numel == a.numel && h.shape == a.shape && h.dtype == a.dtype);
  require(a.data.size() == a.bytes());
  require(h.data_offset + h.data_bytes == size);
  require(a.data.data() != nullptr);

  // Same bytes, same array.
  NpyArray b;
  require(parse_npy(data, size, &b).is_ok());
  require(b.shape == a.shape && b.dtype == a.dtype && b.bytes() == a.bytes());
  require(a.bytes() == 0 || std::memcmp(a.data.data(), b.data.data(), a.bytes()) == 0);

  // Round trip through the writer's preamble: little-endian, C order, same values.
  std::string file = npy_preamble(a.dtype, a.shape);
  require(!file.empty());
  file.append(reinterpret_cast<const char*>(a.data.data()), a.bytes());
  NpyArray c;
  require(parse_npy(reinterpret_cast<const uint8_t*>(file.data()), file.size(), &c).is_ok());
  require(c.shape == a.shape && c.dtype == a.dtype && c.conversions.empty());
  require(a.bytes() == 0 || std::memcmp(a.data.data(), c.data.data(), a.bytes()) == 0);
  return 0;
}
