// Terminal escaping (issue 45, analyzer/text/terminal_text.h) and the atomic file writer
// (analyzer/text/markup.h WriteTextFile).

#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "analyzer/text/markup.h"
#include "analyzer/text/terminal_text.h"
#include "graph/utf8_text.h"

namespace memplan {
namespace {

TEST_CASE("control characters and invalid UTF-8 are shown as \\xNN", "[text][bad-input]") {
  // An xterm title (ESC ] 0 ; t BEL) and a screen clear (ESC [ 2 J): each control byte escaped.
  CHECK(EscapeForTerminal("\x1b]0;t\x07name") == "\\x1b]0;t\\x07name");
  CHECK(EscapeForTerminal("\x1b[2J") == "\\x1b[2J");
  // Line feed and tab are layout, kept; DEL and carriage return are not.
  CHECK(EscapeForTerminal("a\tb\nc") == "a\tb\nc");
  CHECK(EscapeForTerminal("a\rb\x7f") == "a\\x0db\\x7f");
  // The C1 CSI (U+009B, bytes C2 9B) is a control too; U+00E9 (C3 A9, e-acute) is text.
  CHECK(EscapeForTerminal("\xc2\x9b"
                          "2J") == "\\xc2\\x9b2J");
  CHECK(EscapeForTerminal("caf\xc3\xa9") == "caf\xc3\xa9");
  // A stray byte, a truncated sequence and an overlong '/' (C0 AF) are not UTF-8.
  CHECK(EscapeForTerminal("bad\xffname") == "bad\\xffname");
  CHECK(EscapeForTerminal("\xe2\x82") == "\\xe2\\x82");
  CHECK(EscapeForTerminal("\xc0\xaf") == "\\xc0\\xaf");
  // A 4-byte character (U+1F600) passes whole.
  CHECK(EscapeForTerminal("\xf0\x9f\x98\x80") == "\xf0\x9f\x98\x80");
}

TEST_CASE("UTF-8 validity follows RFC 3629", "[text]") {
  CHECK(IsValidUtf8("plain"));
  CHECK(IsValidUtf8("\xe2\x82\xac"));            // U+20AC
  CHECK_FALSE(IsValidUtf8("\xed\xa0\x80"));      // a surrogate, U+D800
  CHECK_FALSE(IsValidUtf8("\xf4\x90\x80\x80"));  // U+110000, beyond Unicode
  CHECK(EscapeInvalidUtf8("a\xff\xfe") == "a\\xff\\xfe");
}

std::string Slurp(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST_CASE("WriteTextFile replaces a file whole and keeps its mode", "[text][bad-input]") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("memplan_write_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const fs::path file = dir / "out.txt";
  REQUIRE(WriteTextFile(file.string(), "old\n").ok());
  ::chmod(file.c_str(), 0640);
  REQUIRE(WriteTextFile(file.string(), "new content\n").ok());
  CHECK(Slurp(file) == "new content\n");
  struct stat info {};
  REQUIRE(::stat(file.c_str(), &info) == 0);
  CHECK((info.st_mode & 0777) == 0640);
  // Nothing but the file is left in the folder (the temporary was renamed).
  CHECK(std::distance(fs::directory_iterator(dir), fs::directory_iterator()) == 1);
  // A folder that does not exist: an error, and nothing written.
  auto missing = WriteTextFile((dir / "no" / "x.txt").string(), "x");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().message.rfind("cannot write '", 0) == 0);
  // Through a symbolic link the file it names is replaced and the link stays a link.
  const fs::path link = dir / "link.txt";
  fs::create_symlink(file, link);
  REQUIRE(WriteTextFile(link.string(), "via link\n").ok());
  CHECK(fs::is_symlink(fs::symlink_status(link)));
  CHECK(Slurp(file) == "via link\n");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace memplan
