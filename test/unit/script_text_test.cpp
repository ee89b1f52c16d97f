#include "helpers.h"
#include "support/script_text.h"

#include <catch2/catch.hpp>
#include <cstdio>
#include <string>

using namespace qr;
using qr::test::error_of;

TEST_CASE("shell_word: bare when safe or single-quoted, and sh reads back the same bytes") {
  CHECK(shell_word("qwen35_397b@gb300:bf16", "t") == "qwen35_397b@gb300:bf16");
  CHECK(shell_word("", "t") == "''");
  CHECK(shell_word("a b", "t") == "'a b'");
  CHECK(shell_word("it's", "t") == "'it'\\''s'");
  CHECK(shell_word("$(x)`y`;\n", "t") == "'$(x)`y`;\n'");
  for (const std::string text :
       {"a'b''c", "$HOME \\ \"q\"", "line\nbreak\r", "-x", "\xe2\x80\xa8"}) {
    const std::string cmd = "printf %s " + shell_word(text, "t");
    FILE* p = ::popen(cmd.c_str(), "r");
    REQUIRE(p != nullptr);
    std::string got;
    for (int c; (c = std::fgetc(p)) != EOF;)
      got += static_cast<char>(c);
    CHECK(::pclose(p) == 0);
    CHECK(got == text);
  }
  CHECK_THAT(error_of([] { (void)shell_word(std::string("a\0b", 3), "env_vars.X"); }),
             Catch::Contains("env_vars.X 'a\\0b' holds a NUL byte"));
}

TEST_CASE("require_one_line refuses every line break and control character and names the token") {
  for (const auto& [text, found] :
       {std::pair<std::string, std::string>{"a\nb", "a line break (U+000A)"},
        {"a\rb", "a line break (U+000D)"},
        {"a\xc2\x85"
         "b",
         "a line break (U+0085)"},
        {"a\xe2\x80\xa8"
         "b",
         "a line break (U+2028)"},
        {"a\xe2\x80\xa9"
         "b",
         "a line break (U+2029)"},
        {"a\tb", "a control character (U+0009)"},
        {"a\x7f"
         "b",
         "a control character (U+007F)"},
        {"a\xc2\x9b"
         "b",
         "a control character (U+009B)"},
        {std::string("a\0b", 3), "a NUL byte (U+0000)"},
        {"a\xff"
         "b",
         "invalid UTF-8 (at byte 1)"}}) {
    INFO(escaped_for_message(text));
    const std::string& token = text; // clang 14 cannot capture a structured binding
    CHECK_THAT(error_of([&] { require_one_line(token, "--job-name"); }),
               Catch::StartsWith("--job-name '" + escaped_for_message(text) + "' holds " + found));
  }
  CHECK_NOTHROW(require_one_line("qwen35 ü '\"$(x)", "t"));
  CHECK(escaped_for_message("a\nb\xff\xe2\x80\xa8\x01") == "a\\nb\\xFF\\u2028\\x01");
}

TEST_CASE("escaped_for_message writes line breaks, terminal and bidi controls as escapes") {
  CHECK(escaped_for_message("a\nb\rc\td") == "a\\nb\\rc\\td");
  CHECK(escaped_for_message("\x1b]0;t\x07\x7f") == "\\x1B]0;t\\x07\\x7F");
  CHECK(escaped_for_message("x\xc2\x85y\xe2\x80\xa8z\xe2\x80\xa9") == "x\\u0085y\\u2028z\\u2029");
  CHECK(escaped_for_message("\xe2\x80\xae\xe2\x81\xa6\xe2\x80\x8f\xd8\x9c") ==
        "\\u202E\\u2066\\u200F\\u061C");
  CHECK(escaped_for_message("caf\xc3\xa9 \xe2\x80\x94 ok") == "caf\xc3\xa9 \xe2\x80\x94 ok");
  CHECK(escaped_for_message("bad\xff") == "bad\\xFF");
}

TEST_CASE("message_line is escaped and cut to kMaxMessageBytes at a character boundary") {
  CHECK(message_line("one\ntwo") == "one\\ntwo");
  const std::string long_text = std::string(kMaxMessageBytes - 1, 'x') + "\xc3\xa9" + "tail";
  const std::string line = message_line(long_text);
  CHECK(line.starts_with(std::string(kMaxMessageBytes - 1, 'x') + " ... ("));
  CHECK(line.ends_with(" more bytes)"));
  CHECK(line.size() < kMaxMessageBytes + 40);
  CHECK(message_line(std::string(100'000, '\n')).size() < kMaxMessageBytes + 40);
}
