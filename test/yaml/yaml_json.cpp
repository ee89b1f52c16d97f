// Test-only: reads YAML files with qwen-recipe's reader and prints, per file, one line: the value
// tree as canonical JSON, or "error: <message>". The PyYAML differential test
// (pyyaml_differential.py) compares these lines with what PyYAML's safe_load makes of each file.
//
// Canonical JSON: null, true/false, ints as integers, floats as {"float": "<%.17g>"} (so that 1
// and 1.0 stay apart, and inf and nan are expressible), strings with every non-ASCII code point
// as \uXXXX (surrogate pairs above the BMP), lists as arrays, mappings as {"map": [[key, value],
// ...]} in document order (keys keep their types). With --dump first, each line is instead
// {"yaml": "<the value written back by to_yaml>"}, for comparison with PyYAML's safe_dump.
#include "support/error.h"
#include "support/utf8.h"
#include "yaml/value.h"
#include "yaml/yaml_read.h"
#include "yaml/yaml_write.h"

#include <cmath>
#include <cstdio>
#include <iostream>
#include <string>

namespace {

void write_string(std::string& out, std::string_view s) {
  out += '"';
  for (const char32_t cp : qr::to_u32(s)) {
    char buf[16];
    if (cp == '"' || cp == '\\') {
      out += '\\';
      out += static_cast<char>(cp);
    } else if (cp >= 0x20 && cp < 0x7F) {
      out += static_cast<char>(cp);
    } else if (cp < 0x10000) {
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(cp));
      out += buf;
    } else {
      const auto v = static_cast<unsigned>(cp - 0x10000);
      std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
      out += buf;
    }
  }
  out += '"';
}

void write_value(std::string& out, const qr::Value& v) {
  switch (v.kind()) {
  case qr::Value::Kind::Null:
    out += "null";
    break;
  case qr::Value::Kind::Bool:
    out += v.as_bool() ? "true" : "false";
    break;
  case qr::Value::Kind::Int:
    out += std::to_string(v.as_int());
    break;
  case qr::Value::Kind::Float: {
    char buf[40];
    const double d = v.as_float();
    if (std::isnan(d))
      std::snprintf(buf, sizeof buf, "nan");
    else if (std::isinf(d))
      std::snprintf(buf, sizeof buf, d < 0 ? "-inf" : "inf");
    else
      std::snprintf(buf, sizeof buf, "%.17g", d);
    out += "{\"float\": \"";
    out += buf;
    out += "\"}";
    break;
  }
  case qr::Value::Kind::Str:
    write_string(out, v.as_str());
    break;
  case qr::Value::Kind::List: {
    out += '[';
    const char* sep = "";
    for (const qr::Value& item : v.as_list()) {
      out += sep;
      write_value(out, item);
      sep = ", ";
    }
    out += ']';
    break;
  }
  case qr::Value::Kind::Map: {
    out += "{\"map\": [";
    const char* sep = "";
    for (const auto& [key, item] : v.as_map()) {
      out += sep;
      out += '[';
      if (key.integer)
        out += key.text;
      else
        write_string(out, key.text);
      out += ", ";
      write_value(out, item);
      out += ']';
      sep = ", ";
    }
    out += "]}";
    break;
  }
  }
}

} // namespace

int main(int argc, char** argv) {
  int failures = 0;
  const bool dump = argc > 1 && std::string_view(argv[1]) == "--dump";
  for (int i = dump ? 2 : 1; i < argc; ++i) {
    std::string line;
    try {
      const auto doc = qr::read_yaml_file(argv[i]);
      const qr::Value value = qr::to_untyped_value(*doc, *doc->root);
      if (dump) {
        line = "{\"yaml\": ";
        write_string(line, qr::to_yaml(value));
        line += "}";
      } else {
        write_value(line, value);
      }
    } catch (const qr::Error& e) {
      std::string message;
      write_string(message, e.what());
      line = "{\"error\": " + message + "}";
      ++failures;
    }
    std::cout << line << '\n';
  }
  return failures == 0 ? 0 : 1;
}
