// "Did you mean": the nearest candidate, and the likelier typo among equally near ones.
#include "support/suggest.h"

#include <catch2/catch.hpp>

using qr::closest_match;
using qr::did_you_mean;

TEST_CASE("suggest: the nearest name, or none when nothing is close") {
  const std::vector<std::string> keys = {"tensor_model_parallel_size",
                                         "pipeline_model_parallel_size", "seq_length",
                                         "micro_batch_size"};
  CHECK(closest_match("seq_lenght", keys) == "seq_length");
  CHECK(closest_match("tensor_paralel_size", keys) == "tensor_model_parallel_size");
  CHECK(closest_match("zzz", keys).empty());
  CHECK(did_you_mean("micro_batch_sise", keys) == " (did you mean 'micro_batch_size'?)");
  CHECK(did_you_mean("qqqqqqqq", keys).empty());
}

TEST_CASE("suggest: among equally near names, a doubled or dropped letter beats a wrong one") {
  // tpp -> tp drops a letter; tpp -> pp changes one. Both are one edit away.
  CHECK(closest_match("tpp", {"pp", "tp"}) == "tp");
  CHECK(closest_match("tpp", {"tp", "pp"}) == "tp");
  CHECK(closest_match("ep", {"cp", "tp", "epp"}) == "epp");
  // Same kind of edit: the longer shared prefix, then the alphabetical first.
  CHECK(closest_match("vpx", {"cpx", "vpy"}) == "vpy");
  CHECK(closest_match("xa", {"xb", "xc"}) == "xb");
  CHECK(closest_match("xa", {"xc", "xb"}) == "xb");
}
