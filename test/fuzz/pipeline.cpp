// Pipeline text as --pipeline takes it: parsed, bound, order-checked and run on a recipe's base
// config (or qr::Error at any step). Its canonical text parses back to the same pipeline, and
// the config it builds writes out and reads back the same.
#include "fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace qr;
  return fuzz::run([&] {
    Pipeline pipeline = Pipeline::parse(fuzz::text(data, size));
    Config config = fuzz::prepared().config;
    const Catalog& catalog = fuzz::compiler().catalog();
    pipeline.bind(config, catalog);
    Pipeline again = Pipeline::parse(pipeline.text());
    again.bind(config, catalog);
    fuzz::expect(again.text() == pipeline.text(), "pipeline text does not parse back the same",
                 pipeline.text());
    pipeline.check_order();
    run_passes(pipeline, {}, config, catalog);
    check_final_invariants(pipeline, {}, {}, config);
    fuzz::expect_round_trip(config.root());
  });
}
