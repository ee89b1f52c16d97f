// Sweeps (--multirun), one override per line of the input: each sweep parses (or fails with
// qr::Error naming it); the expansion has the product of the axes' sizes as its run count, each
// run's overrides parse as single overrides, and the run names are distinct plain file names.
#include "overrides/sweep.h"

#include "fuzz.h"

#include <set>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace qr;
  return fuzz::run([&] {
    std::vector<std::string> tokens;
    for (std::string_view token : fuzz::split(fuzz::text(data, size), '\n'))
      tokens.emplace_back(token);
    const Sweep sweep = parse_sweep(tokens);
    std::size_t product = 1;
    for (const SweepAxis& a : sweep.axes) {
      fuzz::expect(!a.values.empty(), "an axis without values", a.token);
      product = std::min<std::size_t>(product * a.values.size(), 1u << 20);
    }
    const std::vector<SweepRun> runs = expand_sweep(sweep, 256);
    fuzz::expect(runs.size() == product, "the run count is not the product of the axes");
    std::set<std::string> names;
    for (const SweepRun& r : runs) {
      fuzz::expect(names.insert(r.name).second, "two runs share a name", r.name);
      fuzz::expect(
          !r.name.empty() && r.name.size() <= kMaxRunNameBytes &&
              r.name.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                       "0123456789._+-%=,") == std::string::npos,
          "a run name that is no plain file name", r.name);
      fuzz::expect(r.overrides.size() == tokens.size(), "a run lost or gained an override");
      for (std::size_t i = 0; i < sweep.axes.size(); ++i)
        (void)parse_override(r.choices[i]);
    }
  });
}
