// The one error type of the library: a one-line message that names the file, key or token at
// fault and what to do. `main` prints it as `error: <message>` and exits 2.
#pragma once

#include <stdexcept>
#include <string>

namespace qr {

class Error : public std::runtime_error {
public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

} // namespace qr
