#pragma once
// Text bound for a terminal (stdout reports, the one-line error, progress lines) with what a
// crafted model could use to drive the terminal shown as text instead. A node named
// "\x1b]0;owned\x07" retitles an xterm and "\x1b[2J" clears it when printed raw; escaped, the
// user reads the name. Every control character (C0 but tab and line feed, DEL, the C1 range
// U+0080..U+009F, which some terminals obey as ESC-sequences) and every byte that is not
// well-formed UTF-8 becomes "\xNN", one escape per byte.

#include <string>
#include <string_view>

namespace memplan {

std::string EscapeForTerminal(std::string_view text);

}  // namespace memplan
