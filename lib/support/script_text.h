// What a user's text may become in the files qwen-recipe writes for a shell: every generated
// script word goes through shell_word, and everything that lands in a comment (the YAML header,
// a script's header), an #SBATCH line or a file name goes through require_one_line. A byte that
// the text cannot carry is refused with a one-line error naming the token, never rewritten.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace qr {

// The text as one POSIX shell word that the shell reads back as exactly these bytes: the text
// itself when every byte is in [A-Za-z0-9@%+=:,./_-], else single-quoted ('\'' for a quote).
// Any byte but NUL survives a single-quoted word, line breaks included; NUL cannot be in an
// argument or an environment value at all, so it is refused (qr::Error naming `what`).
std::string shell_word(std::string_view text, std::string_view what);

// Refuses (qr::Error naming `what`, the text shown escaped) text that is not one line of
// printable UTF-8: invalid UTF-8, a line break (LF, CR, NEL U+0085, U+2028, U+2029), or any other
// C0 or C1 control character, DEL, or NUL. `hint` says what to do instead; empty: remove it.
void require_one_line(std::string_view text, std::string_view what, std::string_view hint = {});

// The one escaping of user text for what qwen-recipe prints (error, warning and info lines,
// check's report): everything require_one_line refuses, and the bidirectional-text controls that
// reorder what a terminal shows (U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069), written
// as an escape (\n, \r, \t, \0, \xNN for other control bytes and invalid UTF-8, \uXXXX), so
// that echoed text is one line and carries no terminal control.
std::string escaped_for_message(std::string_view text);

// The longest line qwen-recipe prints as a message; text past it is cut (message_line).
inline constexpr std::size_t kMaxMessageBytes = 4096;

// A whole message as printed (`error: ...`, `info: ...`): escaped_for_message, then cut to
// kMaxMessageBytes at a character boundary with the number of bytes left out, so that no input
// can make a message span lines or megabytes. Every line the CLI prints to stderr goes through it.
std::string message_line(std::string_view text);

} // namespace qr
