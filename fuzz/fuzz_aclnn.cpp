// libFuzzer target: the CANN C API of every operator of the descriptor list, from aclCreateTensor through
// both phases (the descriptors' C API bindings call the public aclnn functions).
//
// Memory. Two arenas: D, an aclrtMalloc block (tracked: nnops must refuse any view that leaves it, whatever
// the descriptor claims), and H, ordinary host memory (untracked: by the C API's contract the storage
// described by storageDims must exist there, so this harness only places a tensor in H when its storage
// span fits in H; otherwise the tensor moves to D). Tensors may also have a null tensorData, alias one
// another exactly or partially, and start anywhere in D (any alignment). A workspace block W backs phase two.
//
// Input format (bytes past the end read as 0, so the empty input is a valid, launchable call):
//   byte 0   operator: index into the operator list (mod its length)
//   byte 1   flags: 1 launch on a real stream (else the null stream), 2 use_locking-style flag argument,
//            4 workspace size one byte short, 8 null workspace, 16 launch twice, 32 destroy the executor instead
//            of launching, 64 tensors whose dtype may be T or float32 in float32
//   byte 2   dtype: 0 ACL_FLOAT, 1 ACL_FLOAT16, 2 ACL_BF16, k >= 3: the raw aclDataType value k - 3
//   byte 3   rank of the main tensor: min_rank + b mod (max_rank - min_rank + 1) (the descriptor's ranks)
//   bytes    one per dim of the main tensor: 1 + b (the other tensors' shapes follow from the descriptor)
//   then     mutation records until the input ends: tensor (byte, mod the tensor count), op (byte: low
//            nibble the field, bits 4-6 an index, bit 7 set: a one-byte signed value follows, else 8 bytes
//            little-endian), value. Fields: 0 view dim[i], 1 stride[i], 2 storage dim[i], 3 offset,
//            4 view rank (v % 10), 5 storage rank (v % 10), 6 dtype (raw), 7 format (raw), 8 placement
//            (v & 3: 0 null data, or with v & 8 no tensor at all (a null aclTensor*), 1 D + (v >> 8) bytes, 2 H + (v >> 8) bytes, both rounded down to a multiple
//            of 4 unless v & 4; 3 alias tensor (v >> 8 & 0xff) plus a byte delta (v >> 16 & 0xff) - 128), 9 the 8 bytes
//            of v written at the tensor's data (scalar values), 10 make the tensor dense again (strides and storage
//            from its view dims), 11 copy the view dims, strides and storage dims of tensor v; the scalar
//            arguments of the aclnn signature (the binding's AclCall): 12 ints[i] = v, 13 reals[i] = the double
//            with v's bits, 14 flags[i] = v & 1, 15 the bool array: v & 7 entries, entry k = bit 8 + k of v,
//            or a null array when v & 0xff == 0xff.
//
// Checked besides what ASan, UBSan and LeakSanitizer catch:
//   - a rejected phase one returns a CANN error code, sets *executor = nullptr, leaves a message, and no
//     arena byte changed;
//   - a rejected launch changes no arena byte; a second launch of one executor is refused;
//   - a successful launch changes no byte outside the byte ranges of the outputs' views;
//   - no executor is left behind.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "src/ops/op_desc.hpp"

namespace {

constexpr size_t kDevBytes = 256 << 10;  // large enough for the multi-threaded plans (>= 2^15 elements)
constexpr size_t kHostBytes = 64 << 10;
constexpr size_t kWorkBytes = 4 << 10;

void require(bool ok) {
  if (!ok) __builtin_trap();
}

struct Env {
  aclrtStream stream = nullptr;
  unsigned char* dev = nullptr;
  unsigned char* host = nullptr;
  void* work = nullptr;
  std::vector<unsigned char> dev_before, host_before;
};

Env& env() {
  static Env* e = [] {
    auto* e = new Env;
    // Two threads, so that big enough calls take the parallel plans (and the workspace path).
    setenv("NNOPS_NUM_THREADS", "2", 1);
    require(aclInit(nullptr) == ACL_SUCCESS);
    require(aclrtSetDevice(0) == ACL_SUCCESS);
    require(aclrtCreateStream(&e->stream) == ACL_SUCCESS);
    void* p = nullptr;
    require(aclrtMalloc(&p, kDevBytes, ACL_MEM_MALLOC_HUGE_FIRST) == ACL_SUCCESS);
    e->dev = static_cast<unsigned char*>(p);
    require(aclrtMalloc(&e->work, kWorkBytes, ACL_MEM_MALLOC_HUGE_FIRST) == ACL_SUCCESS);
    e->host = static_cast<unsigned char*>(std::aligned_alloc(64, kHostBytes));
    e->dev_before.resize(kDevBytes);
    e->host_before.resize(kHostBytes);
    return e;
  }();
  return *e;
}

class Reader {
 public:
  Reader(const uint8_t* p, size_t n) : p_(p), n_(n) {}
  bool done() const { return i_ >= n_; }
  uint8_t u8() { return i_ < n_ ? p_[i_++] : 0; }
  uint64_t u64() {
    uint64_t v = 0;
    for (int k = 0; k < 8; ++k) v |= static_cast<uint64_t>(u8()) << (8 * k);
    return v;
  }

 private:
  const uint8_t* p_;
  size_t n_, i_ = 0;
};

struct Desc {
  std::vector<int64_t> view, strides, storage;
  int64_t offset = 0;
  int dtype = ACL_FLOAT;
  int format = ACL_FORMAT_ND;
  unsigned char* data = nullptr;
  bool absent = false;  // pass a null aclTensor* (an optional argument left out)

  void make_dense() {
    strides.assign(view.size(), 1);
    uint64_t s = 1;
    for (size_t i = view.size(); i-- > 0;) {
      strides[i] = static_cast<int64_t>(s);
      s *= static_cast<uint64_t>(view[i] > 0 ? view[i] : 1);  // wraps for absurd dims: fine, nnops checks
    }
    storage = view;
    offset = 0;
  }
};

size_t acl_size(int dtype) { return aclDataTypeSize(static_cast<aclDataType>(dtype)); }

// Bytes of the storage the descriptor claims from data, or SIZE_MAX when the product overflows.
uint64_t storage_bytes(const Desc& d) {
  uint64_t n = acl_size(d.dtype);
  if (n == 0) n = 1;
  for (int64_t s : d.storage) {
    if (s < 0) return 0;  // nnops rejects it before touching memory
    if (__builtin_mul_overflow(n, static_cast<uint64_t>(s), &n)) return UINT64_MAX;
  }
  return n;
}

int64_t numel(const Desc& d) {
  int64_t n = 1;
  for (int64_t v : d.view) {
    if (v < 0 || __builtin_mul_overflow(n, v, &n)) return -1;
  }
  return n;
}

bool in(const unsigned char* p, const unsigned char* base, size_t size) { return p >= base && p < base + size; }

// The byte range [first, last) a view that nnops accepted spans (from its lowest element: strides are
// non-negative then).
void output_range(const Desc& d, uintptr_t* first, uintptr_t* last) {
  const size_t es = acl_size(d.dtype);
  *first = *last = 0;
  if (d.data == nullptr || numel(d) <= 0) return;
  int64_t reach = 0;
  for (size_t i = 0; i < d.view.size() && i < d.strides.size(); ++i) reach += (d.view[i] - 1) * d.strides[i];
  *first = reinterpret_cast<uintptr_t>(d.data) + static_cast<uintptr_t>(d.offset) * es;
  *last = *first + static_cast<uintptr_t>(reach + 1) * es;
}

// Every byte of the arena outside the ranges is unchanged.
bool unchanged_outside(const unsigned char* now, const unsigned char* before, size_t size,
                       const std::vector<std::pair<uintptr_t, uintptr_t>>& ranges) {
  for (size_t i = 0; i < size; ++i) {
    if (now[i] == before[i]) continue;
    const uintptr_t a = reinterpret_cast<uintptr_t>(now + i);
    bool covered = false;
    for (const auto& r : ranges) covered = covered || (a >= r.first && a < r.second);
    if (!covered) return false;
  }
  return true;
}

}  // namespace

// LLVM's OpenMP runtime keeps some per-thread-team memory until exit (tests/sanitizers/lsan.supp explains).
extern "C" const char* __lsan_default_suppressions() { return "leak:libomp.so\n"; }

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Env& e = env();
  Reader in_(data, size);
  const auto& all = nnops::ops::all_ops();
  const nnops::ops::OpDesc& op = *all[in_.u8() % all.size()];
  const uint8_t flags = in_.u8();
  const uint8_t dsel = in_.u8();
  const int dtype = dsel == 0 ? ACL_FLOAT : dsel == 1 ? ACL_FLOAT16 : dsel == 2 ? ACL_BF16 : dsel - 3;
  const int rank = op.min_rank + in_.u8() % (op.max_rank - op.min_rank + 1);

  // Every input starts from the same memory (zeros: beta = lr = 0 are valid scalars).
  std::memset(e.dev, 0, kDevBytes);
  std::memset(e.host, 0, kHostBytes);

  // The valid template: dense tensors of the descriptor's shapes, laid out one after another in D.
  std::vector<int64_t> shape;
  for (int i = 0; i < rank; ++i) shape.push_back(1 + in_.u8());
  const nnops::ops::Attrs attrs = op.attrs_for(shape);
  const std::vector<std::vector<int64_t>> shapes = op.shapes(shape, attrs);
  const int nt = static_cast<int>(op.tensors.size());
  std::vector<Desc> t(nt);
  for (int i = 0; i < nt; ++i) {
    Desc& d = t[i];
    d.dtype = dtype;
    if (op.tensors[i].dtype == nnops::ops::DtypeRule::kTOrF32 && (flags & 64)) d.dtype = ACL_FLOAT;
    d.view = shapes[i];
    d.make_dense();
  }
  nnops::ops::AclCall call;
  op.acl->defaults(shapes, attrs, &call);
  if (!call.flags.empty()) call.flags[0] = (flags & 2) != 0;
  size_t at = 0;
  for (Desc& d : t) {
    d.data = e.dev + at % kDevBytes;
    const int64_t n = numel(d);
    const size_t es = acl_size(d.dtype) ? acl_size(d.dtype) : 1;
    at += (n > 0 ? static_cast<size_t>(n) * es : 0);
    at = (at + 63) / 64 * 64;
  }

  // Mutations.
  std::vector<uint64_t> writes;  // (tensor, value) pairs applied after placement
  while (!in_.done()) {
    Desc& d = t[in_.u8() % nt];
    const uint8_t op = in_.u8();
    const int field = op & 15, idx = (op >> 4) & 7;
    const uint64_t v =
        (op & 128) ? static_cast<uint64_t>(static_cast<int64_t>(static_cast<int8_t>(in_.u8()))) : in_.u64();
    const int64_t sv = static_cast<int64_t>(v);
    switch (field) {
      case 0:
        if (idx < static_cast<int>(d.view.size())) d.view[idx] = sv;
        break;
      case 1:
        if (idx < static_cast<int>(d.strides.size())) d.strides[idx] = sv;
        break;
      case 2:
        if (idx < static_cast<int>(d.storage.size())) d.storage[idx] = sv;
        break;
      case 3:
        d.offset = sv;
        break;
      case 4:
        d.view.resize(v % 10, 1);
        d.strides.resize(d.view.size(), 1);
        break;
      case 5:
        d.storage.resize(v % 10, 1);
        break;
      case 6:
        d.dtype = static_cast<int>(v);
        break;
      case 7:
        d.format = static_cast<int>(v);
        break;
      case 8:
        switch (v & 3) {
          case 0:
            d.data = nullptr;
            d.absent = (v & 8) != 0;
            break;
          case 1:
            d.data = e.dev + ((v >> 8) % kDevBytes & ((v & 4) ? ~size_t{0} : ~size_t{3}));
            break;
          case 2:
            d.data = e.host + ((v >> 8) % kHostBytes & ((v & 4) ? ~size_t{0} : ~size_t{3}));
            break;
          case 3: {
            const Desc& o = t[((v >> 8) & 0xff) % nt];
            if (o.data == nullptr) break;
            unsigned char* p = o.data + static_cast<int>((v >> 16) & 0xff) - 128;
            // Stay inside the arena the other tensor is in (a pointer between arenas is untracked memory).
            const bool dev = in(o.data, e.dev, kDevBytes);
            unsigned char* base = dev ? e.dev : e.host;
            const size_t sz = dev ? kDevBytes : kHostBytes;
            if (!in(p, base, sz)) p = o.data;
            d.data = p;
            break;
          }
        }
        break;
      case 9:
        writes.push_back(static_cast<uint64_t>(&d - t.data()));
        writes.push_back(v);
        break;
      case 10:
        d.make_dense();
        break;
      case 11: {
        const Desc& o = t[v % nt];
        d.view = o.view, d.strides = o.strides, d.storage = o.storage, d.offset = o.offset;
        break;
      }
      case 12:
        if (idx < static_cast<int>(call.ints.size())) call.ints[idx] = sv;
        break;
      case 13:
        if (idx < static_cast<int>(call.reals.size())) std::memcpy(&call.reals[idx], &v, 8);
        break;
      case 14:
        if (idx < static_cast<int>(call.flags.size())) call.flags[idx] = v & 1;
        break;
      case 15:
        call.bools_null = (v & 0xff) == 0xff;
        call.bools.assign(v & 7, false);
        for (size_t k = 0; k < call.bools.size(); ++k) call.bools[k] = (v >> (8 + k)) & 1;
        break;
      default:
        break;
    }
  }
  // Host memory is unchecked by contract: a tensor goes to H only with storage that exists there.
  for (Desc& d : t) {
    if (d.data != nullptr && in(d.data, e.host, kHostBytes)) {
      const uint64_t need = storage_bytes(d);
      if (need > static_cast<uint64_t>(e.host + kHostBytes - d.data)) d.data = e.dev + (d.data - e.host);
    }
  }
  for (size_t k = 0; k + 1 < writes.size(); k += 2) {
    unsigned char* p = t[writes[k]].data;
    const bool ok = p != nullptr && ((in(p, e.dev, kDevBytes) && p + 8 <= e.dev + kDevBytes) ||
                                     (in(p, e.host, kHostBytes) && p + 8 <= e.host + kHostBytes));
    if (ok) std::memcpy(p, &writes[k + 1], 8);
  }

  std::vector<aclTensor*> at_(nt, nullptr);
  for (int i = 0; i < nt; ++i) {
    const Desc& d = t[i];
    if (d.absent) continue;
    at_[i] = aclCreateTensor(d.view.data(), d.view.size(), static_cast<aclDataType>(d.dtype), d.strides.data(),
                             d.offset, static_cast<aclFormat>(d.format), d.storage.data(), d.storage.size(), d.data);
    require(at_[i] != nullptr);  // every count is <= 9 and every array is present
  }
  std::memcpy(e.dev_before.data(), e.dev, kDevBytes);
  std::memcpy(e.host_before.data(), e.host, kHostBytes);
  auto arenas_unchanged = [&] {
    return std::memcmp(e.dev_before.data(), e.dev, kDevBytes) == 0 &&
           std::memcmp(e.host_before.data(), e.host, kHostBytes) == 0;
  };

  uint64_t ws = 12345;
  aclOpExecutor* exec = reinterpret_cast<aclOpExecutor*>(uintptr_t{0x10});
  call.t = at_;
  const aclnnStatus st = op.acl->phase_one(call, &ws, &exec);
  const std::string msg = st != ACLNN_SUCCESS ? aclGetRecentErrMsg() : "";
  static const bool verbose = std::getenv("NNOPS_FUZZ_VERBOSE") != nullptr;  // to check what a seed reaches
  if (verbose) {
    std::fprintf(stderr, "%s phase one: %d, workspace %llu %s\n", op.name, st,
                 static_cast<unsigned long long>(ws), msg.c_str());
  }
  if (st != ACLNN_SUCCESS) {
    require(st == ACLNN_ERR_PARAM_NULLPTR || st == ACLNN_ERR_PARAM_INVALID);
    require(exec == nullptr && ws == 0);
    require(!msg.empty());
    require(arenas_unchanged());
  } else {
    require(exec != nullptr);
    if (flags & 32) {
      require(aclDestroyAclOpExecutor(exec) == ACLNN_SUCCESS);
    } else {
      void* w = (flags & 8) ? nullptr : e.work;
      uint64_t wsz = ws;
      if ((flags & 4) && wsz > 0) --wsz;
      aclrtStream s = (flags & 1) ? e.stream : nullptr;
      auto launch = [&] { return op.acl->phase_two(w, wsz, exec, s); };
      const aclnnStatus ls = launch();
      if (ls == ACLNN_SUCCESS) {
        require(aclrtSynchronizeStream(s) == ACL_SUCCESS);
        std::vector<std::pair<uintptr_t, uintptr_t>> outs;
        for (int i = 0; i < nt; ++i) {
          if (op.tensors[i].role == nnops::ops::Role::kIn) continue;
          outs.emplace_back();
          output_range(t[i], &outs.back().first, &outs.back().second);
        }
        require(unchanged_outside(e.dev, e.dev_before.data(), kDevBytes, outs));
        require(unchanged_outside(e.host, e.host_before.data(), kHostBytes, outs));
        if (flags & 16) require(launch() == ACLNN_ERR_PARAM_INVALID);
      } else {
        // Refused: a workspace too small or null; nothing ran and the executor is still ours to release.
        require(ls == ACLNN_ERR_PARAM_INVALID || ls == ACLNN_ERR_PARAM_NULLPTR);
        require(arenas_unchanged());
        require(aclDestroyAclOpExecutor(exec) == ACLNN_SUCCESS);
      }
    }
  }
  for (aclTensor* a : at_) {
    if (a != nullptr) require(aclDestroyTensor(a) == ACLNN_SUCCESS);
  }
  aclGetRecentErrMsg();  // clear this thread's messages
  return 0;
}
