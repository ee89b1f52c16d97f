// YAML input: PyYAML's resolution for untyped values, and clear errors for bad documents.
#include "support/error.h"
#include "yaml/yaml_read.h"
#include "yaml/yaml_write.h"

#include <catch2/catch.hpp>
#include <cmath>

using namespace qr;

namespace {

Value load(const std::string& text) {
  auto doc = parse_yaml(text, "in.yaml");
  return to_untyped_value(*doc, *doc->root);
}

std::string error_of(const std::string& text) {
  try {
    load(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

} // namespace

TEST_CASE("plain scalars resolve as PyYAML's safe_load does (YAML 1.1)") {
  CHECK(resolve_plain_scalar("yes") == Value(true));
  CHECK(resolve_plain_scalar("Off") == Value(false));
  CHECK(resolve_plain_scalar("~").is_null());
  CHECK(resolve_plain_scalar("").is_null());
  CHECK(resolve_plain_scalar("42") == Value(42));
  CHECK(resolve_plain_scalar("-7") == Value(-7));
  CHECK(resolve_plain_scalar("1_000") == Value(1000));
  CHECK(resolve_plain_scalar("0x10") == Value(16));
  CHECK(resolve_plain_scalar("010") == Value(8));
  CHECK(resolve_plain_scalar("0x1_0000_0000_0000_0000") == Value(0x1p64)); // beyond int64: float
  CHECK(resolve_plain_scalar("1.5") == Value(1.5));
  CHECK(resolve_plain_scalar("1.0e-05") == Value(1e-5));
  CHECK(resolve_plain_scalar(".inf") == Value(INFINITY));
  // PyYAML's float needs a dot and a signed exponent: these stay text.
  CHECK(resolve_plain_scalar("1e-5") == Value("1e-5"));
  CHECK(resolve_plain_scalar("1e5") == Value("1e5"));
  CHECK(resolve_plain_scalar("abc") == Value("abc"));
}

TEST_CASE("quoted scalars are strings and integer keys stay integers") {
  const Value v = load("a: '1'\nb: \"yes\"\nc:\n  0: x\n");
  CHECK(v.as_map().find("a")->as_str() == "1");
  CHECK(v.as_map().find("b")->as_str() == "yes");
  CHECK(to_yaml(v) == "a: '1'\nb: 'yes'\nc:\n  0: x\n");
}

TEST_CASE("bad documents fail with the file, line and column") {
  CHECK_THAT(error_of("a: 1\na: 2\n"), Catch::Contains("in.yaml:2:1: duplicate key 'a'"));
  CHECK_THAT(error_of("a: [1, 2\n"),
             Catch::Contains("in.yaml:") && Catch::Contains("invalid YAML"));
  CHECK_THAT(error_of("a: 1\n---\nb: 2\n"), Catch::Contains("more than one YAML document"));
  CHECK_THAT(error_of(""), Catch::Contains("empty document"));
  CHECK_THAT(error_of("a: !!python/object:os.system x\n"), Catch::Contains("unsupported YAML tag"));
  CHECK_THAT(error_of("a: \xff\n"), Catch::Contains("invalid UTF-8 at byte 3 (line 1, column 4)"));
}

TEST_CASE("a quoted string that is never closed is an error, not the rest of the file") {
  // yaml-cpp alone reads `"x` to the end of the input, swallowing every key after it.
  for (const std::string& text : {std::string("a: \"x\nb: 1\n"), std::string("a: 'x\nb: 1\n"),
                                  std::string("\xEF\xBB\xBF"
                                              "a: \"x\nb: 1\n"),
                                  std::string("\xC3\xA9: 1\na: [\"y\", \"x]\n")})
    CHECK_THAT(error_of(text), Catch::Contains("-quoted string that starts here is never closed"));
  CHECK(load("a: \"q\\\"\"\nb: 'it''s'\n") == load("a: 'q\"'\nb: \"it's\"\n"));
}

TEST_CASE("an empty entry of a flow collection is refused, as PyYAML does") {
  CHECK_THAT(error_of("a: [x, , y]\n"),
             Catch::StartsWith("in.yaml:1:8: invalid YAML: an empty entry"));
  CHECK_THAT(error_of("a: {x: 1, , y: 2}\n"), Catch::Contains("an empty entry"));
  CHECK(load("a: [x, y, ]\nb: {x: , y}\n") == load("a: [x, y]\nb: {x: null, y: null}\n"));
}

TEST_CASE("a last key with no ':' is refused, not read as null") {
  CHECK(error_of("train:\n  global_batch_size: 8\n  train_iters") ==
        "in.yaml:3:3: invalid YAML: the key 'train_iters' has no ':' after it: write key: value");
  CHECK(load("a: 1\nb:") == load("a: 1\nb: null\n"));
  CHECK(load("? b\n") == load("b: null\n"));
}

TEST_CASE("line endings: CRLF reads as LF, a lone CR is refused") {
  CHECK(load("a: x\r\nb: 1\r\n") == load("a: x\nb: 1\n"));
  CHECK_THAT(error_of("a: x\rb: 1\n"), Catch::StartsWith("in.yaml:1:5: a carriage return without"));
  CHECK_THAT(error_of("a: x\r"), Catch::StartsWith("in.yaml:1:5: a carriage return without"));
}

TEST_CASE("the escapes \\N and \\_ read as UTF-8 (yaml-cpp gives single Latin-1 bytes)") {
  CHECK(load("a: \"x\\Ny\\_z\\Lw\"\n").as_map().find("a")->as_str() ==
        "x\xC2\x85y\xC2\xA0z\xE2\x80\xA8w");
}

TEST_CASE("syntax errors say what to do") {
  CHECK(error_of("a:\n\tb: 1\n") == "in.yaml:2:1: a tab indents this line; YAML indents with "
                                    "spaces only: replace the tab with spaces");
  CHECK_THAT(error_of("a: [1, 2\n"), Catch::EndsWith("a '[' is never closed: add the missing ']'"));
  CHECK_THAT(error_of("a:\n  b: 1\n c: 2\n"),
             Catch::StartsWith("in.yaml:3:2: invalid YAML: end of map not found; this line's "
                               "indentation does not line up"));
  CHECK_THAT(error_of("a: 1\na: 2\n"), Catch::EndsWith("(first at line 1); keep one of them"));
  CHECK_THAT(error_of("d: &d {x: 1}\ne:\n  <<: *d\n"),
             Catch::StartsWith("in.yaml:3:3: merge keys ('<<') are not supported"));
  CHECK(load("'<<': 1\n").as_map().find("<<") != nullptr); // a quoted '<<' is a plain key
}

TEST_CASE("an alias bomb is refused, not expanded") {
  std::string bomb = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 12; ++i)
    bomb += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [*a" + std::to_string(i - 1) +
            ", *a" + std::to_string(i - 1) + ", *a" + std::to_string(i - 1) + ", *a" +
            std::to_string(i - 1) + ", *a" + std::to_string(i - 1) + "]\n";
  CHECK_THAT(error_of(bomb), Catch::Contains("expands to too many nodes"));
}

TEST_CASE("nesting thousands deep is refused") {
  const std::string deep = std::string(5000, '[') + std::string(5000, ']');
  CHECK_THAT(error_of(deep), Catch::Contains("nesting deeper than"));
}

TEST_CASE("the compact serialized form gives back the same document") {
  const std::string text = "a: &x\n  b: [1, '2', null]\n  c: \"q\"\nd: *x\ne: !!str 5\n";
  auto doc = parse_yaml(text, "in.yaml");
  auto copy = deserialize_yaml_doc(serialize_yaml_doc(*doc), "in.yaml");
  CHECK(to_untyped_value(*copy, *copy->root) == to_untyped_value(*doc, *doc->root));
  CHECK(copy->root->entries[1].first->line == 4);
  CHECK(copy->root->entries[1].first->column == 1);
}
