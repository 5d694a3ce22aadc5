#pragma once
// A model file read piecewise with pread (graph/weight_free_model.h), so the weights it holds
// inline are skipped by offset and never brought into memory.

#include <memory>
#include <string>

#include "graph/expected.h"
#include "graph/weight_free_model.h"

namespace memplan {

class FileByteSource final : public ModelByteSource {
 public:
  // The same checks as ReadRegularFile (graph/regular_file.h): a regular file of at most
  // `max_bytes`; `what` names its role in messages.
  static Expected<std::unique_ptr<FileByteSource>> Open(const std::string& path, int64_t max_bytes,
                                                        const std::string& what);
  ~FileByteSource() override;
  FileByteSource(const FileByteSource&) = delete;
  FileByteSource& operator=(const FileByteSource&) = delete;

  int64_t size() const override { return size_; }
  // A short read means the file shrank after it was opened: an error naming the file.
  Status Read(int64_t offset, int64_t count, char* out) override;

 private:
  FileByteSource(int fd, int64_t size, std::string path, std::string what)
      : fd_(fd), size_(size), path_(std::move(path)), what_(std::move(what)) {}

  int fd_;
  int64_t size_;
  std::string path_;
  std::string what_;
};

}  // namespace memplan
