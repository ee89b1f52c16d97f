// check's reports: XML text a JUnit reader accepts whatever bytes a golden or a value holds.
#include "check/check.h"

#include <catch2/catch.hpp>

using namespace qr;

TEST_CASE("xml_escape: markup as entities, what XML 1.0 cannot carry as U+FFFD") {
  CHECK(xml_escape("a&b<c>\"d'e") == "a&amp;b&lt;c&gt;&quot;d&apos;e");
  CHECK(xml_escape("line\nnext\ttab\r") == "line&#10;next&#9;tab&#13;");
  CHECK(xml_escape(std::string("nul\0esc\x1b", 8)) == "nul\xEF\xBF\xBD"
                                                      "esc\xEF\xBF\xBD");
  CHECK(xml_escape("bad \xC3 utf8") == "bad \xEF\xBF\xBD utf8");
  CHECK(xml_escape("\xEF\xBF\xBE") == "\xEF\xBF\xBD"); // U+FFFE is not an XML character
  CHECK(xml_escape("± ⇆ 日本") == "± ⇆ 日本");
}
