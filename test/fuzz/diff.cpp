// `diff` on two documents (the input split at its first NUL byte): any pair ends in qr::Error or
// in differences that are empty exactly when the trees are equal, a document never differs from
// itself, and the dotlist, JSON and unified renderings are produced without failing.
#include "diff/diff.h"

#include "fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace qr;
  const std::string_view input = fuzz::text(data, size);
  const std::size_t nul = input.find('\0');
  if (nul == std::string_view::npos)
    return 0;
  return fuzz::run([&] {
    const auto doc_a = parse_yaml(input.substr(0, nul), "a.yaml");
    const auto doc_b = parse_yaml(input.substr(nul + 1), "b.yaml");
    const Value a = to_untyped_value(*doc_a, *doc_a->root);
    const Value b = to_untyped_value(*doc_b, *doc_b->root);
    const std::vector<Difference> diffs = diff_values(a, b);
    fuzz::expect(diffs.empty() == (a == b), "diff is empty exactly when the trees are equal");
    fuzz::expect(diff_values(a, a).empty(), "a document differs from itself");
    (void)dotlist(diffs);
    (void)to_json(a);
    (void)unified_diff(to_yaml(a), to_yaml(b), "a", "b");
  });
}
