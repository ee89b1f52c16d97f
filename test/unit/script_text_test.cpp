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
