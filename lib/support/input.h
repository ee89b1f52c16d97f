// The one reader of what a user names as input: every file operand, `-` (standard input), and
// every file an option names (--base, --overrides, --env, --env-file, --recipes-dir files,
// manifests, goldens, `launch FILE`). One set of rules for all of them, so that no operand can be
// endless or huge: a regular file over the cap is refused by its size before a byte is read (a
// sparse 10 GB file fails at once), a pipe or character device (`<(pip freeze)`, /dev/zero,
// `yes |`) is read until the cap and refused one byte past it, and directories, sockets and
// block devices are refused. Errors are one line naming the input, escaped.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace qr {

// The cap of a config-like input (a config, an environment file, a golden, a recipe file).
inline constexpr std::size_t kMaxInputBytes = std::size_t{64} << 20;

// The text of the file at `path`, at most `max_bytes` of it. `kind` names what the file is in
// the size message ("a config" -> "... larger than the 64 MiB a config may be"). Throws qr::Error.
std::string read_input_file(const std::string& path, std::size_t max_bytes = kMaxInputBytes,
                            std::string_view kind = "a config");

// Standard input, by the same rules; messages name it "<stdin>".
std::string read_standard_input(std::size_t max_bytes = kMaxInputBytes,
                                std::string_view kind = "a config");

} // namespace qr
