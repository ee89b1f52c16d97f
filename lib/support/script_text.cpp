#include "support/script_text.h"

#include "support/error.h"
#include "support/utf8.h"

#include <algorithm>
#include <cstdio>

namespace qr {
namespace {

// A code point require_one_line refuses, with its name for the message, or nullptr.
const char* refused_kind(char32_t cp) {
  if (cp == U'\n' || cp == U'\r' || cp == 0x85 || cp == 0x2028 || cp == 0x2029)
    return "a line break";
  if (cp == 0)
    return "a NUL byte";
  if (cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp < 0xA0))
    return "a control character";
  return nullptr;
}

// Bidirectional controls: shown raw they reorder the rest of a terminal line.
bool bidi_control(char32_t cp) {
  return cp == 0x061C || cp == 0x200E || cp == 0x200F || (cp >= 0x202A && cp <= 0x202E) ||
         (cp >= 0x2066 && cp <= 0x2069);
}

std::string code_point(char32_t cp) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "U+%04X", static_cast<unsigned>(cp));
  return buf;
}

} // namespace

std::string shell_word(std::string_view text, std::string_view what) {
  if (text.find('\0') != std::string_view::npos)
    throw Error(std::string(what) + " '" + escaped_for_message(text) +
                "' holds a NUL byte, which no command argument or environment value can carry: "
                "remove it");
  const bool bare = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           std::string_view("@%+=:,./_-").find(c) != std::string_view::npos;
  });
  if (bare)
    return std::string(text);
  std::string out = "'";
  for (char c : text)
    out += c == '\'' ? std::string_view("'\\''") : std::string_view(&c, 1);
  return out + "'";
}

void require_one_line(std::string_view text, std::string_view what, std::string_view hint) {
  auto fail = [&](const std::string& found) {
    throw Error(std::string(what) + " '" + escaped_for_message(text) + "' holds " + found +
                ", and it goes into a comment, an #SBATCH line or a file name, which hold one "
                "line of text: " +
                (hint.empty() ? std::string("remove it") : std::string(hint)));
  };
  if (const std::size_t bad = invalid_utf8_at(text); bad != std::string_view::npos)
    fail("invalid UTF-8 (at byte " + std::to_string(bad) + ")");
  for (char32_t cp : to_u32(text))
    if (const char* kind = refused_kind(cp))
      fail(std::string(kind) + " (" + code_point(cp) + ")");
}

std::string escaped_for_message(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t bad = invalid_utf8_at(text.substr(i));
    const std::size_t good = bad == std::string_view::npos ? text.size() - i : bad;
    for (char32_t cp : to_u32(text.substr(i, good))) {
      if (refused_kind(cp) == nullptr && !bidi_control(cp)) {
        append_utf8(out, std::u32string_view(&cp, 1));
        continue;
      }
      char buf[16];
      if (cp == U'\n' || cp == U'\r' || cp == U'\t' || cp == 0)
        out += cp == U'\n' ? "\\n" : cp == U'\r' ? "\\r" : cp == U'\t' ? "\\t" : "\\0";
      else if (cp < 0x80)
        out += (std::snprintf(buf, sizeof buf, "\\x%02X", static_cast<unsigned>(cp)), buf);
      else
        out += (std::snprintf(buf, sizeof buf, "\\u%04X", static_cast<unsigned>(cp)), buf);
    }
    i += good;
    if (i < text.size()) { // one invalid byte
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", static_cast<unsigned char>(text[i]));
      out += buf;
      ++i;
    }
  }
  return out;
}

std::string message_line(std::string_view text) {
  std::string out = escaped_for_message(text);
  if (out.size() <= kMaxMessageBytes)
    return out;
  std::size_t cut = kMaxMessageBytes;
  while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80)
    --cut; // not inside a UTF-8 sequence
  const std::size_t left_out = out.size() - cut;
  out.resize(cut);
  return out + " ... (" + std::to_string(left_out) + " more bytes)";
}

} // namespace qr
