// Process-wide state of the host device: aclInit, the device reference count, and the streams, which
// are handed out as opaque handles (never pointers) so that a destroyed or made-up stream is reported,
// not dereferenced.
#pragma once

#include <cstdint>
#include <memory>

#include "acl/acl_base.h"
#include "src/acl/stream.hpp"

namespace nnops::acl {

/// Handles are (id << 4) | tag: ids are never reused, and the tag tells a stream from an executor.
inline constexpr unsigned kStreamTag = 0x5;
inline constexpr unsigned kExecutorTag = 0x9;
void* encode_handle(uint64_t id, unsigned tag);
/// False when h does not carry the tag (the id is then 0).
bool decode_handle(const void* h, unsigned tag, uint64_t* id);

/// The live stream behind a handle, or null.
std::shared_ptr<Stream> find_stream(aclrtStream handle);

/// aclInit was called and a device is set (what launching work requires).
bool device_ready();

namespace testing {
/// Test hook: appends an arbitrary task to a stream (false if the stream is not live). Lets tests block a
/// stream, observe order and concurrency, and make a task fail on purpose.
bool enqueue(aclrtStream stream, Task task);
}  // namespace testing

}  // namespace nnops::acl
