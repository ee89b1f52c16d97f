// UTF-8 <-> code points, for the emitter's column counting and escapes.
#pragma once

#include <string>
#include <string_view>

namespace qr {

// Decodes UTF-8; invalid sequences become U+FFFD (callers validate input with valid_utf8 first).
std::u32string to_u32(std::string_view s);
void append_utf8(std::string& out, std::u32string_view s);
// Byte offset of the first invalid sequence, or npos.
std::size_t invalid_utf8_at(std::string_view s);

} // namespace qr
