// .npy reader and writer. The format: https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html
//   "\x93NUMPY" major minor, header length (uint16 LE in 1.0; uint32 LE in 2.0 and 3.0), then a Python dict
//   literal {'descr': ..., 'fortran_order': ..., 'shape': (...), } padded with spaces and ended by '\n',
//   then the raw data.
// The dict is parsed by a small recursive-descent parser that accepts exactly the literal forms NumPy
// writes (single- or double-quoted strings, True/False, a tuple of non-negative integers with an optional
// Python 2 'L' suffix) and rejects everything else with a message; it never evaluates anything.
#include "tools/cli/npy.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace nnops::cli {

void AlignedBytes::Free::operator()(unsigned char* p) const { std::free(p); }

Status AlignedBytes::allocate(std::size_t bytes) {
  // Round up to the alignment (aligned_alloc requires it) and never ask for 0 bytes, so data() is
  // non-null even for an empty array.
  const std::size_t rounded = bytes > SIZE_MAX - 63 ? 0 : (bytes + 63) / 64 * 64;
  if (bytes > 0 && rounded == 0) {
    return Status(StatusCode::kInvalidArgument, "cannot allocate " + std::to_string(bytes) + " bytes");
  }
  unsigned char* p = static_cast<unsigned char*>(std::aligned_alloc(64, rounded ? rounded : 64));
  if (!p) return Status(StatusCode::kInvalidArgument, "out of memory allocating " + std::to_string(bytes) + " bytes");
  data_.reset(p);
  size_ = bytes;
  return Status::ok();
}

namespace {

constexpr bool kHostLittleEndian = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__;
constexpr char kMagic[] = "\x93NUMPY";
constexpr std::size_t kMagicLen = 6;

Status data_error(const std::string& msg) { return Status(StatusCode::kInvalidArgument, msg); }

// A printable, one-line excerpt of header text for error messages.
std::string excerpt(const char* p, const char* end) {
  std::string s;
  for (; p < end && s.size() < 70; ++p) {
    const unsigned char c = static_cast<unsigned char>(*p);
    s += (c >= 0x20 && c < 0x7f) ? static_cast<char>(c) : '?';
  }
  if (p < end) s += "...";
  return s;
}

class DictParser {
 public:
  DictParser(const char* begin, const char* end) : begin_(begin), p_(begin), end_(end) {}

  Status parse(NpyHeader* h) {
    bool have_descr = false, have_fortran = false, have_shape = false;
    skip_ws();
    if (!eat('{')) return error("expected '{'");
    for (;;) {
      skip_ws();
      if (eat('}')) break;
      std::string key;
      if (Status s = parse_string(&key); !s) return s;
      skip_ws();
      if (!eat(':')) return error("expected ':' after '" + key + "'");
      skip_ws();
      bool* seen = nullptr;
      if (key == "descr") {
        seen = &have_descr;
        if (peek() == '[') {
          return data_error(
              "structured dtype (descr is a list of fields) is not supported; expected float32 "
              "'<f4', float16 '<f2' or bfloat16 '<V2'");
        }
        if (Status s = parse_string(&h->descr); !s) return s;
      } else if (key == "fortran_order") {
        seen = &have_fortran;
        if (Status s = parse_bool(&h->fortran_order); !s) return s;
      } else if (key == "shape") {
        seen = &have_shape;
        if (Status s = parse_shape(&h->shape); !s) return s;
      } else {
        return error("unexpected key '" + key + "'");
      }
      if (*seen) return error("key '" + key + "' appears twice");
      *seen = true;
      skip_ws();
      if (eat(',')) continue;
      if (eat('}')) break;
      return error("expected ',' or '}'");
    }
    skip_ws();
    if (p_ != end_) return error("unexpected text after the closing '}'");
    if (!have_descr) return error("the header has no 'descr'");
    if (!have_fortran) return error("the header has no 'fortran_order'");
    if (!have_shape) return error("the header has no 'shape'");
    return Status::ok();
  }

 private:
  Status error(const std::string& what) const {
    return data_error("malformed .npy header (" + what + " at offset " + std::to_string(p_ - begin_) +
                      "): " + excerpt(begin_, end_));
  }
  char peek() const { return p_ < end_ ? *p_ : '\0'; }
  bool eat(char c) {
    if (p_ < end_ && *p_ == c) {
      ++p_;
      return true;
    }
    return false;
  }
  bool eat_word(const char* w) {
    const std::size_t n = std::strlen(w);
    if (static_cast<std::size_t>(end_ - p_) >= n && std::memcmp(p_, w, n) == 0) {
      p_ += n;
      return true;
    }
    return false;
  }
  void skip_ws() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\n' || *p_ == '\r')) ++p_;
  }

  Status parse_string(std::string* out) {
    const char q = peek();
    if (q != '\'' && q != '"') return error("expected a quoted string");
    ++p_;
    const char* start = p_;
    while (p_ < end_ && *p_ != q) {
      // Keys and dtype strings never need escapes; refusing them keeps the parser honest.
      if (*p_ == '\\' || *p_ == '\n') return error("unsupported character in a string");
      ++p_;
    }
    if (p_ == end_) return error("unterminated string");
    out->assign(start, p_);
    ++p_;
    return Status::ok();
  }

  Status parse_bool(bool* out) {
    if (eat_word("True")) {
      *out = true;
      return Status::ok();
    }
    if (eat_word("False")) {
      *out = false;
      return Status::ok();
    }
    return error("expected True or False");
  }

  Status parse_shape(std::vector<int64_t>* shape) {
    shape->clear();
    if (!eat('(')) return error("expected a tuple for 'shape'");
    for (;;) {
      skip_ws();
      if (eat(')')) return Status::ok();
      if (peek() == '-') return data_error("the header's shape has a negative dimension: " + excerpt(begin_, end_));
      if (peek() < '0' || peek() > '9') return error("expected a dimension");
      int64_t v = 0;
      while (peek() >= '0' && peek() <= '9') {
        if (__builtin_mul_overflow(v, int64_t{10}, &v) || __builtin_add_overflow(v, int64_t{*p_ - '0'}, &v)) {
          return data_error("the header's shape has a dimension that does not fit in 64 bits: " +
                            excerpt(begin_, end_));
        }
        ++p_;
      }
      if (peek() == 'L' || peek() == 'l') ++p_;  // Python 2 long literal, as old NumPy wrote it
      shape->push_back(v);
      skip_ws();
      if (eat(')')) return Status::ok();
      if (!eat(',')) return error("expected ',' or ')' in 'shape'");
    }
  }

  const char* begin_;
  const char* p_;
  const char* end_;
};

uint64_t read_le(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// Checks magic and version and returns the size of the whole preamble (everything before the data).
// `size` may be short of the preamble; only the fixed part (8 bytes, then 10 or 12) must be present.
Status preamble_size(const uint8_t* data, std::size_t size, int* major, int* minor, uint64_t* need) {
  const std::size_t magic_have = size < kMagicLen ? size : kMagicLen;
  if (std::memcmp(data, kMagic, magic_have) != 0 || size == 0) {
    return data_error("not an .npy file (it does not start with the .npy magic \\x93NUMPY)");
  }
  if (size < 8) return data_error("truncated .npy header: the file has only " + std::to_string(size) + " bytes");
  *major = data[6];
  *minor = data[7];
  if ((*major != 1 && *major != 2 && *major != 3) || *minor != 0) {
    return data_error("unsupported .npy format version " + std::to_string(*major) + "." + std::to_string(*minor) +
                      " (nnops reads 1.0, 2.0 and 3.0)");
  }
  const std::size_t fixed = *major == 1 ? 10 : 12;
  if (size < fixed) return data_error("truncated .npy header: the file has only " + std::to_string(size) + " bytes");
  const uint64_t hlen = read_le(data + 8, *major == 1 ? 2 : 4);
  if (hlen > kMaxNpyHeaderBytes) {
    return data_error("the .npy header claims " + std::to_string(hlen) + " bytes; nnops accepts at most " +
                      std::to_string(kMaxNpyHeaderBytes));
  }
  *need = fixed + hlen;
  return Status::ok();
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// What a file of this header must hold after the preamble, compared with what it holds.
Status check_data_size(const NpyHeader& h, uint64_t available) {
  if (available == h.data_bytes) return Status::ok();
  const std::string what =
      "shape " + shape_text(h.shape) + " of '" + h.descr + "' needs " + std::to_string(h.data_bytes) + " bytes of data";
  if (available < h.data_bytes) {
    return data_error("truncated data: " + what + "; the file has " + std::to_string(available));
  }
  return data_error("the header does not match the file size: " + what + "; the file has " + std::to_string(available) +
                    " (" + std::to_string(available - h.data_bytes) + " too many)");
}

void byteswap_inplace(unsigned char* p, int64_t n, std::size_t elem) {
  if (elem == 2) {
    for (int64_t i = 0; i < n; ++i) std::swap(p[2 * i], p[2 * i + 1]);
  } else {
    for (int64_t i = 0; i < n; ++i) {
      std::swap(p[4 * i], p[4 * i + 3]);
      std::swap(p[4 * i + 1], p[4 * i + 2]);
    }
  }
}

// out->data holds the file's data bytes; bring them to host byte order and C order.
Status decode_in_place(const NpyHeader& h, NpyArray* out) {
  const std::size_t elem = dtype_size(h.dtype);
  std::string notes;
  if (h.big_endian == kHostLittleEndian && h.numel > 0) {
    byteswap_inplace(out->data.data(), h.numel, elem);
  }
  if (h.big_endian) notes = "big-endian '" + h.descr + "' converted to little-endian";
  // A Fortran-order array of rank <= 1 has the C layout already; so does one with at most one dim > 1.
  int big_dims = 0;
  for (int64_t d : h.shape) big_dims += d > 1;
  if (h.fortran_order && big_dims > 1 && h.numel > 0) {
    AlignedBytes c;
    if (Status s = c.allocate(out->data.size()); !s) return s;
    // Walk C order with an odometer over the multi-index; the Fortran offset follows incrementally.
    const int rank = static_cast<int>(h.shape.size());
    std::vector<int64_t> idx(rank, 0), fstride(rank, 1);
    for (int k = 1; k < rank; ++k) fstride[k] = fstride[k - 1] * h.shape[k - 1];
    int64_t f = 0;
    const unsigned char* src = out->data.data();
    unsigned char* dst = c.data();
    for (int64_t i = 0; i < h.numel; ++i) {
      std::memcpy(dst + i * elem, src + f * elem, elem);
      for (int k = rank - 1; k >= 0; --k) {
        if (++idx[k] < h.shape[k]) {
          f += fstride[k];
          break;
        }
        f -= fstride[k] * (h.shape[k] - 1);
        idx[k] = 0;
      }
    }
    out->data = std::move(c);
  }
  if (h.fortran_order && big_dims > 1) {
    notes += std::string(notes.empty() ? "" : "; ") + "Fortran-order array converted to C order";
  }
  out->dtype = h.dtype;
  out->shape = h.shape;
  out->numel = h.numel;
  out->conversions = std::move(notes);
  return Status::ok();
}

}  // namespace

Status parse_npy_header(const uint8_t* data, std::size_t size, NpyHeader* out) {
  NpyHeader h;
  uint64_t need = 0;
  if (Status s = preamble_size(data, size, &h.major, &h.minor, &need); !s) return s;
  if (size < need) {
    return data_error("truncated .npy header: it declares " + std::to_string(need) +
                      " bytes of preamble; the file has " + std::to_string(size));
  }
  const std::size_t fixed = h.major == 1 ? 10 : 12;
  const char* begin = reinterpret_cast<const char*>(data + fixed);
  const char* end = reinterpret_cast<const char*>(data + need);
  if (Status s = DictParser(begin, end).parse(&h); !s) return s;

  const std::string& d = h.descr;
  if (d == "<f4" || d == ">f4") {
    h.dtype = DType::kFloat32;
  } else if (d == "<f2" || d == ">f2") {
    h.dtype = DType::kFloat16;
  } else if (d == "<V2" || d == "|V2" || d == ">V2") {
    h.dtype = DType::kBFloat16;
  } else {
    return data_error("dtype '" + d +
                      "' is not supported; expected float32 '<f4', float16 '<f2' or bfloat16 '<V2' (as np.save "
                      "writes ml_dtypes.bfloat16), little- or big-endian");
  }
  h.big_endian = d[0] == '>';

  if (h.shape.size() > static_cast<std::size_t>(kMaxRank)) {
    return data_error("shape " + shape_text(h.shape) + " has rank " + std::to_string(h.shape.size()) +
                      "; nnops supports at most " + std::to_string(kMaxRank));
  }
  int64_t numel = 1, bytes = 0;
  for (int64_t dim : h.shape) {
    if (__builtin_mul_overflow(numel, dim, &numel)) {
      return data_error("shape " + shape_text(h.shape) + " has more elements than fit in 64 bits");
    }
  }
  if (__builtin_mul_overflow(numel, static_cast<int64_t>(dtype_size(h.dtype)), &bytes)) {
    return data_error("shape " + shape_text(h.shape) + " of '" + d + "' has more bytes than fit in 64 bits");
  }
  h.numel = numel;
  h.data_bytes = static_cast<uint64_t>(bytes);
  h.data_offset = need;
  *out = std::move(h);
  return Status::ok();
}

Status parse_npy(const uint8_t* data, std::size_t size, NpyArray* out) {
  NpyHeader h;
  if (Status s = parse_npy_header(data, size, &h); !s) return s;
  if (Status s = check_data_size(h, size - h.data_offset); !s) return s;
  NpyArray a;
  if (Status s = a.data.allocate(h.data_bytes); !s) return s;
  if (h.data_bytes) std::memcpy(a.data.data(), data + h.data_offset, h.data_bytes);
  if (Status s = decode_in_place(h, &a); !s) return s;
  *out = std::move(a);
  return Status::ok();
}

namespace {

// Reads up to n bytes at the current offset; *got < n only at end of file.
Status read_fully(int fd, unsigned char* p, std::size_t n, std::size_t* got) {
  std::size_t done = 0;
  while (done < n) {
    const ssize_t r = ::read(fd, p + done, n - done);
    if (r < 0) {
      if (errno == EINTR) continue;
      return data_error(std::string("read failed: ") + std::strerror(errno));
    }
    if (r == 0) break;
    done += static_cast<std::size_t>(r);
  }
  *got = done;
  return Status::ok();
}

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

Status read_npy(const std::string& path, NpyArray* out) {
  Fd f;
  // O_NONBLOCK: opening a FIFO must not wait for a writer (non-regular files are refused below).
  f.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (f.fd < 0) return data_error(std::strerror(errno));
  struct stat st;
  if (::fstat(f.fd, &st) != 0) return data_error(std::strerror(errno));
  if (S_ISDIR(st.st_mode)) return data_error("is a directory, not an .npy file");
  if (!S_ISREG(st.st_mode)) return data_error("not a regular file");
  const uint64_t file_size = static_cast<uint64_t>(st.st_size);

  // The fixed part first (12 bytes covers every version), then the rest of the preamble it declares.
  std::vector<uint8_t> pre(12);
  std::size_t got = 0;
  if (Status s = read_fully(f.fd, pre.data(), pre.size(), &got); !s) return s;
  int major = 0, minor = 0;
  uint64_t need = 0;
  if (Status s = preamble_size(pre.data(), got, &major, &minor, &need); !s) return s;
  if (need > got) {
    pre.resize(need);
    std::size_t more = 0;
    if (Status s = read_fully(f.fd, pre.data() + got, need - got, &more); !s) return s;
    got += more;
  } else {
    pre.resize(need);  // a 1.0 preamble is 10 bytes: the last two read were data
    got = need;
  }
  NpyHeader h;
  if (Status s = parse_npy_header(pre.data(), got, &h); !s) return s;
  const uint64_t available = file_size > h.data_offset ? file_size - h.data_offset : 0;
  if (Status s = check_data_size(h, available); !s) return s;

  NpyArray a;
  if (Status s = a.data.allocate(h.data_bytes); !s) return s;
  if (::lseek(f.fd, static_cast<off_t>(h.data_offset), SEEK_SET) < 0) {
    return data_error(std::string("seek failed: ") + std::strerror(errno));
  }
  if (Status s = read_fully(f.fd, a.data.data(), h.data_bytes, &got); !s) return s;
  if (got != h.data_bytes) return check_data_size(h, got);  // the file shrank while we read it
  if (Status s = decode_in_place(h, &a); !s) return s;
  *out = std::move(a);
  return Status::ok();
}

const char* npy_descr(DType dtype) {
  // NB: bfloat16 is written as '<V2', exactly what np.save writes for an ml_dtypes.bfloat16 array, so the
  // output is the file NumPy itself would write. The alternative 'bfloat16' would make numpy.load return a
  // bfloat16 array directly, but only where ml_dtypes is imported; everywhere else the file would not load.
  switch (dtype) {
    case DType::kFloat32:
      return kHostLittleEndian ? "<f4" : ">f4";
    case DType::kFloat16:
      return kHostLittleEndian ? "<f2" : ">f2";
    case DType::kBFloat16:
      return kHostLittleEndian ? "<V2" : ">V2";
  }
  return "?";
}

std::string npy_preamble(DType dtype, const std::vector<int64_t>& shape) {
  // Byte for byte what numpy.lib.format writes (NumPy 1.24 and later): sorted keys, repr() of the shape,
  // spare spaces so the first dim can grow to 21 digits in place, then padding so the data starts at a
  // multiple of 64 bytes (a full 64 when already aligned, as NumPy computes it).
  std::string tuple = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) tuple += (i ? ", " : "") + std::to_string(shape[i]);
  tuple += shape.size() == 1 ? ",)" : ")";
  std::string dict =
      std::string("{'descr': '") + npy_descr(dtype) + "', 'fortran_order': False, 'shape': " + tuple + ", }";
  if (!shape.empty()) dict.append(21 - std::to_string(shape[0]).size(), ' ');
  for (int major : {1, 2}) {
    const std::size_t fixed = major == 1 ? 10 : 12;
    const std::size_t hlen = dict.size() + 1;
    const std::size_t pad = 64 - (fixed + hlen) % 64;
    const std::size_t total_hlen = hlen + pad;
    if (major == 1 && total_hlen > 0xffff) continue;  // needs 2.0 (not reachable with rank <= 8)
    std::string out(kMagic, kMagicLen);
    out += static_cast<char>(major);
    out += '\0';
    for (std::size_t i = 0; i < fixed - 8; ++i) out += static_cast<char>((total_hlen >> (8 * i)) & 0xff);
    out += dict;
    out.append(pad, ' ');
    out += '\n';
    return out;
  }
  return {};
}

}  // namespace nnops::cli
