// Reading and writing NumPy .npy files (format versions 1.0, 2.0 and 3.0) for the nnops command line.
//
// Accepted dtypes, as NumPy writes them in the header's 'descr':
//   float32   '<f4' (or big-endian '>f4')
//   float16   '<f2' (or '>f2')
//   bfloat16  '<V2' — what np.save writes for an ml_dtypes.bfloat16 array: ml_dtypes registers bfloat16
//             as a 2-byte "void" type, so the name is lost and numpy.load gives back a '|V2' array
//             (use .view(ml_dtypes.bfloat16)). '|V2' (a loaded bfloat16 array saved again) and '>V2' (a
//             byte-swapped bfloat16 array) are read too. Any other 2-byte void array would be taken for
//             bfloat16 as well: the file cannot say otherwise.
// Big-endian arrays are byte-swapped and Fortran-order arrays are transposed to C order on reading (the
// reader says so in NpyArray::conversions). Files are always written as np.save writes them: little-endian,
// C order, format 1.0 (2.0 only if the header would not fit), header padded to 64 bytes, so a file written
// here is byte-for-byte the file np.save would write for the same array.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nnops/dtype.hpp"
#include "nnops/status.hpp"
#include "nnops/tensor_view.hpp"

namespace nnops::cli {

/// Owning, 64-byte-aligned bytes whose allocation failure is a Status, not a crash: file sizes come from
/// the user. The contents are left uninitialized.
class AlignedBytes {
 public:
  AlignedBytes() = default;
  Status allocate(std::size_t bytes);
  unsigned char* data() const { return data_.get(); }
  std::size_t size() const { return size_; }

 private:
  struct Free {
    void operator()(unsigned char* p) const;
  };
  std::unique_ptr<unsigned char, Free> data_;
  std::size_t size_ = 0;
};

/// A decoded array: host byte order, C (row-major) order.
struct NpyArray {
  DType dtype = DType::kFloat32;
  std::vector<int64_t> shape;
  int64_t numel = 0;
  AlignedBytes data;  // numel * dtype_size(dtype) bytes (at least 1 allocated)
  /// What the reader changed, for a note to the user: "" or e.g. "big-endian '>f4' byte-swapped".
  std::string conversions;

  std::size_t bytes() const { return static_cast<std::size_t>(numel) * dtype_size(dtype); }
  TensorView view() const {
    return TensorView::contiguous(data.data(), dtype, shape.data(), static_cast<int>(shape.size()));
  }
};

/// The parsed preamble of a .npy file.
struct NpyHeader {
  int major = 0, minor = 0;
  std::string descr;  // as written, e.g. "<f4"
  DType dtype = DType::kFloat32;
  bool big_endian = false;
  bool fortran_order = false;
  std::vector<int64_t> shape;
  int64_t numel = 0;
  uint64_t data_offset = 0;  // bytes before the array data
  uint64_t data_bytes = 0;   // numel * element size
};

/// Largest header accepted (NumPy itself refuses headers over 10000 bytes by default). Keeps a hostile
/// 4 GiB header length in a 2.0 file from becoming a 4 GiB read.
inline constexpr uint64_t kMaxNpyHeaderBytes = 1 << 20;

/// Parses the preamble (magic, version, header dict) from the first `size` bytes of a file. Pure: reads
/// only [data, data + size). Fails with a one-line message on a bad magic, unknown version, truncated or
/// malformed header, unsupported dtype, negative or oversized dims, rank above kMaxRank, or an element or
/// byte count that overflows int64. Does not look at the data.
Status parse_npy_header(const uint8_t* data, std::size_t size, NpyHeader* out);

/// Parses a whole .npy file held in memory and decodes its data. Pure (no I/O, no global state), so a
/// fuzzer can drive it. Besides parse_npy_header's errors: data shorter than the header says (truncated)
/// or longer (shape does not match the file size).
Status parse_npy(const uint8_t* data, std::size_t size, NpyArray* out);

/// Reads the .npy file at `path`. Same checks as parse_npy; also "No such file or directory" and other
/// I/O errors. The data is read straight into the array (no second copy of the file in memory).
Status read_npy(const std::string& path, NpyArray* out);

/// The preamble np.save would write for a little-endian C-order array of this dtype and shape: magic,
/// version 1.0 (2.0 if needed), header dict, padding to a multiple of 64 bytes, '\n'.
std::string npy_preamble(DType dtype, const std::vector<int64_t>& shape);

/// The descr nnops writes: "<f4", "<f2" or "<V2".
const char* npy_descr(DType dtype);

}  // namespace nnops::cli
