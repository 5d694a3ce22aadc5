#pragma once
// UTF-8 validity of the strings a model file carries. ONNX names are protobuf `string`s that
// onnx.proto (proto2) never checks, so a node may be named with bytes that are not UTF-8; JSON
// cannot hold those (nlohmann throws when dumping them) and a terminal garbles them. The importer
// rewrites each invalid byte as the four characters `\xNN` (graph/proto_name_escaping.h).

#include <cstddef>
#include <string>
#include <string_view>

namespace memplan {

// The length (1 to 4) of the well-formed UTF-8 sequence starting at text[i], or 0 when the byte
// there starts none (a stray continuation byte, an overlong form, a surrogate, beyond U+10FFFF, a
// truncated sequence). REQUIRES: i < text.size().
size_t Utf8SequenceLength(std::string_view text, size_t i);

bool IsValidUtf8(std::string_view text);

// "\xNN" with two lowercase hex digits.
std::string HexByteEscape(unsigned char byte);

// `text` with every byte that is not part of a well-formed UTF-8 sequence written as "\xNN".
std::string EscapeInvalidUtf8(std::string_view text);

}  // namespace memplan
