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
// In valid UTF-8, the byte offset of the first character a YAML reader refuses (PyYAML: C0 and
// C1 controls other than tab, newline, CR and NEL; DEL; U+FFFE, U+FFFF), or npos; `cp` gets it.
std::size_t unprintable_at(std::string_view s, char32_t& cp);

} // namespace qr
