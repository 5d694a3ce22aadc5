#pragma once
// Bounded reads of user-named input files. A path on the command line is untrusted: /dev/zero,
// /dev/urandom, a FIFO or a directory would make a plain read loop forever or block, so only a
// regular file is read, and only after its size is known to be under the caller's limit.

#include <cstdint>
#include <string>

#include "graph/expected.h"

namespace memplan {

// The whole content of `path`. Errors (each one line naming the path): absent or unreadable, not a
// regular file (device, FIFO, socket, directory), larger than `max_bytes`, or changed size while
// being read. `what` names the file's role in messages ("model file", "plan").
Expected<std::string> ReadRegularFile(const std::string& path, int64_t max_bytes,
                                      const std::string& what);

// The checks of ReadRegularFile without the read: the size of `path` when it is a regular file of
// at most `max_bytes` (graph/file_byte_source.h reads such a file piecewise).
Expected<int64_t> RegularFileSize(const std::string& path, int64_t max_bytes,
                                  const std::string& what);

}  // namespace memplan
