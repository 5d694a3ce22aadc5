#include "analyzer/text/markup.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

namespace memplan {
namespace {

// XML 1.0 forbids the control characters other than tab and line breaks, even as references.
bool ForbiddenInXml(unsigned char u) {
  return (u < 0x20 && u != '\t' && u != '\n' && u != '\r') || u == 0x7f;
}

}  // namespace

std::string XmlAllowedText(std::string_view text) {
  std::string out(text);
  for (char& c : out)
    if (ForbiddenInXml(static_cast<unsigned char>(c))) c = '?';
  return out;
}

std::string EscapeMarkup(std::string_view text, bool attribute) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      case '\t':
        out += attribute ? "&#9;" : "\t";
        break;
      case '\n':
        out += attribute ? "&#10;" : "\n";
        break;
      case '\r':
        out += "&#13;";
        break;
      default:
        out += ForbiddenInXml(u) ? '?' : c;
    }
  }
  return out;
}

std::string ReplaceChars(std::string_view text,
                         std::initializer_list<std::pair<char, std::string_view>> replacements) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    auto replaced = std::find_if(replacements.begin(), replacements.end(),
                                 [c](const auto& replacement) { return replacement.first == c; });
    if (replaced != replacements.end()) {
      out += replaced->second;
    } else {
      out += c;
    }
  }
  return out;
}

std::string FormatCoordinate(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.1f", value);
  if (std::strcmp(buffer, "-0.0") == 0) return "0.0";
  return buffer;
}

namespace {

Status WriteError(const std::string& path, int error) {
  return MakeError("cannot write '" + path + "': " + std::strerror(error));
}

// Writes all of `content` to `fd`; the errno of the first failure, or 0.
int WriteAll(int fd, std::string_view content) {
  size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n < 0 ? errno : EIO;
    done += static_cast<size_t>(n);
  }
  return 0;
}

// A device or FIFO (`--out /dev/stdout`) is written in place: it cannot be replaced by a rename.
Status WriteInPlace(const std::string& path, std::string_view content) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (fd < 0) return WriteError(path, errno);
  const int error = WriteAll(fd, content);
  if (::close(fd) != 0 && error == 0) return WriteError(path, errno);
  if (error != 0) return WriteError(path, error);
  return OkStatus();
}

// The permission bits a new file gets: 0666 less the umask (read without changing it for good).
mode_t NewFileMode() {
  const mode_t mask = ::umask(0);
  ::umask(mask);
  return 0666 & ~mask;
}

}  // namespace

// Replaces `path` through a temporary file in the same folder renamed over it once complete, so a
// failed write leaves the old file as it was; the replaced file keeps its permission bits.
Status WriteTextFile(const std::string& path, std::string_view content) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path target(path);
  // Through a link, the file it names is replaced, not the link.
  if (fs::is_symlink(fs::symlink_status(target, ec))) {
    fs::path resolved = fs::weakly_canonical(target, ec);
    if (!ec) target = resolved;
  }
  struct stat existing {};
  const bool exists = ::stat(target.c_str(), &existing) == 0;
  if (exists && S_ISDIR(existing.st_mode)) return WriteError(path, EISDIR);
  if (exists && !S_ISREG(existing.st_mode)) return WriteInPlace(path, content);
  // The whole content goes to a temporary file beside the target, renamed over it only once
  // written and closed: a failed write (a full disk, a file-size limit) leaves the old file.
  fs::path folder = target.parent_path();
  if (folder.empty()) folder = ".";
  std::string temporary =
      (folder / ("." + target.filename().string() + ".memplan-XXXXXX")).string();
  const int fd = ::mkstemp(temporary.data());
  if (fd < 0) return WriteError(path, errno);
  ::fchmod(fd, exists ? (existing.st_mode & 07777) : NewFileMode());
  int error = WriteAll(fd, content);
  if (::close(fd) != 0 && error == 0) error = errno;
  if (error == 0 && ::rename(temporary.c_str(), target.c_str()) != 0) error = errno;
  if (error != 0) {
    ::unlink(temporary.c_str());
    return WriteError(path, error);
  }
  return OkStatus();
}

}  // namespace memplan
