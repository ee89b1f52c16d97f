// Hydra overrides as they follow the recipe on the command line, one per line of the input:
// each parses (or fails with qr::Error), prints back to a token that parses the same, and
// applies to a built recipe; the invariants are checked after them, and the config still
// writes out and reads back the same.
#include "fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace qr;
  return fuzz::run([&] {
    std::vector<Override> overrides;
    for (std::string_view token : fuzz::split(fuzz::text(data, size), '\n')) {
      const Override o = parse_override(token);
      const Override back = parse_override(to_token(o));
      fuzz::expect(back.op == o.op && back.key == o.key && back.value == o.value &&
                       back.has_value == o.has_value,
                   "to_token does not parse back to the same override", to_token(o));
      overrides.push_back(o);
    }
    Config config = fuzz::built().config;
    run_passes(Pipeline{}, {}, config, fuzz::compiler().catalog());
    run_overrides(overrides, config);
    check_final_invariants(Pipeline{}, overrides, {}, config);
    fuzz::expect_round_trip(config.root());
  });
}
