#include "graph/regular_file.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace memplan {

Expected<int64_t> RegularFileSize(const std::string& path, int64_t max_bytes,
                                  const std::string& what) {
  // stat() before open(): opening a FIFO for reading blocks until a writer appears.
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    return MakeError("cannot open " + what + " '" + path + "': " + std::strerror(errno));
  }
  if (S_ISDIR(info.st_mode)) return MakeError(path + " is a directory, not a " + what);
  if (!S_ISREG(info.st_mode)) return MakeError(path + " is not a regular file");
  if (info.st_size > max_bytes) {
    return MakeError(what + " '" + path + "' is " + std::to_string(info.st_size) +
                     " bytes, more than the " + std::to_string(max_bytes) + " bytes memplan reads");
  }
  return static_cast<int64_t>(info.st_size);
}

Expected<std::string> ReadRegularFile(const std::string& path, int64_t max_bytes,
                                      const std::string& what) {
  MEMPLAN_TRY(int64_t size, RegularFileSize(path, max_bytes, what));
  std::ifstream file(path, std::ios::binary);
  if (!file) return MakeError("cannot open " + what + " '" + path + "': " + std::strerror(errno));
  // Read at most one byte more than stat() promised, so a file that grows meanwhile is caught
  // rather than read without bound.
  std::string bytes(static_cast<size_t>(size) + 1, '\0');
  file.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (file.bad()) return MakeError("cannot read " + what + " '" + path + "'");
  const auto got = static_cast<size_t>(file.gcount());
  if (got != static_cast<size_t>(size)) {
    return MakeError(what + " '" + path + "' changed size while being read");
  }
  bytes.resize(got);
  return bytes;
}

}  // namespace memplan
