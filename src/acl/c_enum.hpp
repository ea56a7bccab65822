// Reading C enums that callers fill: a C program may pass any int for an aclDataType, aclFormat or
// aclrtMemcpyKind (a newer CANN value, a typo), and in C++ loading an enum object that holds a value
// outside the enum's range is undefined (UBSan flags it). So entry points copy such arguments out as
// plain ints and validate the int.
#pragma once

#include <cstring>
#include <type_traits>

namespace nnops::acl {

template <class E>
int enum_int(const E& e) noexcept {
  static_assert(std::is_enum_v<E> && sizeof(E) == sizeof(int), "a C enum of int size");
  int v;
  std::memcpy(&v, &e, sizeof v);
  return v;
}

/// Writes v into a caller's enum object byte for byte (no enum-typed load or store of an odd value).
template <class E>
void store_enum(E* out, int v) noexcept {
  static_assert(std::is_enum_v<E> && sizeof(E) == sizeof(int), "a C enum of int size");
  std::memcpy(out, &v, sizeof v);
}

}  // namespace nnops::acl
