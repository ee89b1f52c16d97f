// gdn-backend{backend=...}: which GatedDeltaNet kernels Megatron-Core runs.
#include "passes/registry.h"

namespace qr {

void run_gdn_backend(PassContext& ctx) {
  const std::string& backend = ctx.arg("backend").as_str();
  if (!ctx.config().has_field("model.gdn_kernel_backend")) {
    ctx.note("Megatron-Core profile '" + ctx.config().profile() +
             "' has no model.gdn_kernel_backend; left unset (backend=" + backend +
             " applies with --mcore gdn)");
    return;
  }
  ctx.set("model.gdn_kernel_backend", backend);
}

} // namespace qr
