#include "graph/file_byte_source.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "graph/regular_file.h"

namespace memplan {

Expected<std::unique_ptr<FileByteSource>> FileByteSource::Open(const std::string& path,
                                                               int64_t max_bytes,
                                                               const std::string& what) {
  MEMPLAN_TRY(int64_t size, RegularFileSize(path, max_bytes, what));
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return MakeError("cannot open " + what + " '" + path + "': " + std::strerror(errno));
  return std::unique_ptr<FileByteSource>(new FileByteSource(fd, size, path, what));
}

FileByteSource::~FileByteSource() { ::close(fd_); }

Status FileByteSource::Read(int64_t offset, int64_t count, char* out) {
  MEMPLAN_CHECK(offset >= 0 && count >= 0 && count <= size_ - offset);
  while (count > 0) {
    const ssize_t got = ::pread(fd_, out, static_cast<size_t>(count), static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0)
      return MakeError("cannot read " + what_ + " '" + path_ + "': " + std::strerror(errno));
    if (got == 0) return MakeError(what_ + " '" + path_ + "' changed size while being read");
    out += got;
    offset += got;
    count -= got;
  }
  return OkStatus();
}

}  // namespace memplan
