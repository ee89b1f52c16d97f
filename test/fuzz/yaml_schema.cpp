// The YAML reader and schema typing, as `--base FILE` uses them: any text ends in qr::Error or
// in a tree that the emitter writes out and the reader reads back the same, and that types
// against the schema of both Megatron-Core profiles (or fails with qr::Error).
#include "fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace qr;
  return fuzz::run([&] {
    const auto doc = parse_yaml(fuzz::text(data, size), "fuzz.yaml");
    fuzz::expect_round_trip(to_untyped_value(*doc, *doc->root));
    for (const char* profile : {"pinned", "gdn"})
      fuzz::run([&] { (void)fuzz::compiler().catalog().base_from_doc(*doc, profile); });
  });
}
