// The backend list that gdn-bench and the GPU tests iterate over.
#include "gdn.h"

namespace qr::gdn {

std::vector<std::unique_ptr<Backend>> all_backends() {
  std::vector<std::unique_ptr<Backend>> v;
  v.push_back(make_reference_backend());
  v.push_back(make_chunked_backend());
  v.push_back(make_fused_backend());
  return v;
}

} // namespace qr::gdn
