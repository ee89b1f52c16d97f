// Sweeps (`build --multirun`, `launch --multirun`): Hydra's sweep syntax over the command line's
// overrides, expanded as Hydra's basic sweeper does, into one override list per combination.
//   key=a,b,c              a choice sweep: two or more elements separated by commas
//   key=choice(a,b,c)      the same, written as a function
//   key=range(stop)        integers 0 .. stop-1
//   key=range(start,stop[,step])   integers from start, by step (default 1), stopping before stop;
//                          arguments may be named (start=, stop=, step=), as in Hydra
// An element is a YAML value as in a single override: `'a,b'` and `"a,b"` are one value, `[1,2]`
// and `{a: 1}` one list or map. Hydra's other functions (interval, glob, sort, shuffle, tag, the
// casts) and ranges over floats are refused, naming the token. docs/build.md has the details.
#pragma once

#include "yaml/value.h"

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace qr {

// One swept override: its prefix and key as given (`+`, `++` or none) and the values it takes;
// or one swept launcher shortcut (`--tp 1,2`: prefix "--", key "tp").
struct SweepAxis {
  std::string token; // as given, for messages
  std::string prefix;
  std::string key;
  bool shortcut = false;
  std::vector<std::string> values; // each the YAML text of one override value
  std::string short_key;           // the key's last name, or the whole key when two axes share it
};

struct Sweep {
  std::vector<std::string> tokens; // the overrides as given
  std::vector<int> axis_of_token;  // -1: a fixed override, the same in every run
  std::vector<std::pair<std::string, std::string>> shortcuts; // name and text, as given
  std::vector<int> axis_of_shortcut;                          // -1: fixed
  std::vector<SweepAxis> axes; // the overrides' in the order given, then the shortcuts'
};

// One combination: its overrides (the fixed ones as given, each swept one with its value, in the
// command line's order) and the file name stem built from its swept values.
struct SweepRun {
  std::string name;
  std::vector<std::string> overrides;
  std::vector<std::pair<std::string, std::string>> shortcuts; // name and value text
  std::vector<std::string> choices; // `key=value` (`--tp 2`) of each axis, in axis order
};

// A sweep writes a file per combination; more than this is a mistake.
constexpr std::size_t kMaxSweepRuns = 4096;
// Longest file name stem a run gets (its .yaml, .sbatch and temporary names stay within
// NAME_MAX).
constexpr std::size_t kMaxRunNameBytes = 200;

// Reads the sweeps among the overrides and the launcher shortcuts' texts (`--tp 1,2` sweeps TP
// with what follows it); throws qr::Error naming the token at fault.
Sweep parse_sweep(const std::vector<std::string>& tokens,
                  const std::vector<std::pair<std::string, std::string>>& shortcuts = {});

// The combinations in Hydra's basic sweeper order (the first axis varies slowest), or an error
// naming the product when there are more than `max_runs`. No sweep: one run.
std::vector<SweepRun> expand_sweep(const Sweep& sweep, std::size_t max_runs = kMaxSweepRuns);

// A value as a file name part: bytes in [A-Za-z0-9._+-] as they are, every other byte as %XX
// (upper-case hex), so that distinct values give distinct names and none holds '/' or a control
// character.
std::string file_name_part(std::string_view text);

// The `multirun.yaml` index: each axis and its values, then each run's name, files and choices,
// in run order. `launch_files[i]`: run i's launch file name; none when the list is shorter.
Value sweep_index(const Sweep& sweep, const std::vector<SweepRun>& runs,
                  const std::vector<std::string>& config_files,
                  const std::vector<std::string>& launch_files);

} // namespace qr
