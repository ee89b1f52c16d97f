// The C ABI (qr_gdn.h) over kernels/gdn's Backend interface: argument checks that need no device,
// then one backend call. Nothing here allocates device memory or synchronises.
#define QR_GDN_BUILDING 1
#include "qr_gdn.h"

#include "gdn.h"

#include <algorithm>
#include <climits>
#include <cuda_runtime_api.h>
#include <exception>
#include <memory>
#include <string>

namespace {

using namespace qr::gdn;

thread_local std::string last_error;

// A failed check: the status and the message qr_gdn_last_error() returns.
struct Failure {
  int32_t status = QR_GDN_OK;
  std::string message;
  bool failed() const { return status != QR_GDN_OK; }
};

Failure invalid(std::string m) {
  return {QR_GDN_ERROR_INVALID_ARGUMENT, std::move(m)};
}

const Backend* backend_of(int32_t id) {
  // Constructed once; the backends are stateless.
  static const std::unique_ptr<Backend> fused = make_fused_backend();
  static const std::unique_ptr<Backend> reference = make_reference_backend();
  switch (id) {
  case QR_GDN_BACKEND_FUSED:
    return fused.get();
  case QR_GDN_BACKEND_REFERENCE:
    return reference.get();
  default:
    return nullptr;
  }
}

Failure find_backend(int32_t id, const Backend*& out) {
  out = backend_of(id);
  if (!out)
    return invalid("backend: unknown value " + std::to_string(id) +
                   " (QR_GDN_BACKEND_FUSED = 0, QR_GDN_BACKEND_REFERENCE = 1)");
  return {};
}

// The shape checks shared by every entry point; fills `s` (gdn.h's int-sized Shape).
Failure check_shape(const Backend& b, const qr_gdn_shape* shape, Shape& s) {
  if (!shape)
    return invalid("shape: null pointer");
  const struct {
    const char* name;
    int64_t value;
  } dims[] = {{"batch", shape->batch},           {"seq_len", shape->seq_len},
              {"key_heads", shape->key_heads},   {"value_heads", shape->value_heads},
              {"head_dim_k", shape->head_dim_k}, {"head_dim_v", shape->head_dim_v}};
  for (const auto& d : dims)
    if (d.value <= 0 || d.value > INT_MAX)
      return invalid(std::string("shape.") + d.name + ": must be in 1.." + std::to_string(INT_MAX) +
                     ", got " + std::to_string(d.value));
  if (shape->value_heads % shape->key_heads != 0)
    return invalid("shape.value_heads: " + std::to_string(shape->value_heads) +
                   " is not a multiple of shape.key_heads (" + std::to_string(shape->key_heads) +
                   ")");
  // Element offsets of the largest tensor must fit int64 with room to spare.
  const double elems = double(shape->batch) * double(shape->seq_len) * double(shape->value_heads) *
                       double(std::max(shape->head_dim_k, shape->head_dim_v));
  if (elems > double(INT64_MAX) / 64)
    return invalid("shape: " + std::to_string(elems) + " elements per tensor is too many");
  if (shape->num_seqs < 0)
    return invalid("shape.num_seqs: must be 0 (dense) or the number of packed sequences, got " +
                   std::to_string(shape->num_seqs));
  if (shape->num_seqs > 0 && shape->batch != 1)
    return invalid("shape.batch: must be 1 with packed sequences (num_seqs " +
                   std::to_string(shape->num_seqs) + "), got " + std::to_string(shape->batch));
  s.batch = int(shape->batch);
  s.seq_len = int(shape->seq_len);
  s.key_heads = int(shape->key_heads);
  s.value_heads = int(shape->value_heads);
  s.head_dim_k = int(shape->head_dim_k);
  s.head_dim_v = int(shape->head_dim_v);
  s.sequences = int(shape->num_seqs);
  if (shape->num_seqs > shape->seq_len)
    return invalid("shape.num_seqs: " + std::to_string(shape->num_seqs) + " sequences in " +
                   std::to_string(shape->seq_len) + " tokens (each needs at least one)");
  // The shape part of unsupported(): the first architecture built stands in for the device, which
  // check_device asks about at launch.
  const DeviceInfo standin{QR_GDN_STANDIN_SM / 10, QR_GDN_STANDIN_SM % 10, 1};
  if (std::string why = b.unsupported(standin, s); !why.empty())
    return {QR_GDN_ERROR_NOT_SUPPORTED, b.name() + ": " + why + " (got Dk " +
                                            std::to_string(s.head_dim_k) + ", Dv " +
                                            std::to_string(s.head_dim_v) + ")"};
  return {};
}

// cu_seqlens belongs with num_seqs; its values are checked on the device (qr_gdn_input_error).
Failure check_varlen(const qr_gdn_shape& shape, const int32_t* cu_seqlens) {
  if (shape.num_seqs > 0 && !cu_seqlens)
    return invalid("cu_seqlens: null, but shape.num_seqs is " + std::to_string(shape.num_seqs));
  if (shape.num_seqs == 0 && cu_seqlens)
    return invalid("cu_seqlens: given, but shape.num_seqs is 0 (dense)");
  if (reinterpret_cast<uintptr_t>(cu_seqlens) % alignof(int32_t) != 0)
    return invalid("cu_seqlens: must be 4-byte aligned");
  return {};
}

bool fused(const Backend& b) {
  return b.name() == "fused";
}

// A token tensor: present, non-negative strides; outputs need positive ones; the fused kernels
// read and write 16-byte rows.
Failure check_tensor(const char* name, const qr_gdn_tensor& t, bool output, bool rows16) {
  if (!t.data)
    return invalid(std::string(name) + ": null data pointer");
  const int64_t lowest = output ? 1 : 0;
  if (t.stride_b < lowest || t.stride_t < lowest || t.stride_h < lowest)
    return invalid(std::string(name) + ": strides (" + std::to_string(t.stride_b) + ", " +
                   std::to_string(t.stride_t) + ", " + std::to_string(t.stride_h) + ") must be " +
                   (output ? "positive" : "non-negative"));
  if (rows16 && (reinterpret_cast<uintptr_t>(t.data) % 16 != 0 || t.stride_b % 8 != 0 ||
                 t.stride_t % 8 != 0 || t.stride_h % 8 != 0))
    return invalid(std::string(name) +
                   ": the fused backend needs 16-byte aligned rows (data address a multiple of 16 "
                   "bytes, strides multiples of 8 elements)");
  return {};
}

Failure check_state(const char* name, const void* p, bool aligned16) {
  if (p && aligned16 && reinterpret_cast<uintptr_t>(p) % 16 != 0)
    return invalid(std::string(name) + ": must be 16-byte aligned");
  return {};
}

Failure check_buffer(const char* name, const void* p, size_t have, size_t need) {
  if (need == 0)
    return {};
  if (!p)
    return invalid(std::string(name) + ": null, but " + std::to_string(need) + " bytes are needed");
  if (have < need)
    return invalid(std::string(name) + "_bytes: " + std::to_string(have) + " given, " +
                   std::to_string(need) + " needed");
  if (reinterpret_cast<uintptr_t>(p) % 256 != 0)
    return invalid(std::string(name) + ": must be 256-byte aligned");
  return {};
}

#define QR_CHECK(expr)                                                                             \
  do {                                                                                             \
    if (Failure f_ = (expr); f_.failed())                                                          \
      return f_;                                                                                   \
  } while (0)

// What the forward and backward arguments share: the shape, the offsets, the scale, the inputs.
template <class Args>
Failure check_inputs(const Backend& b, const Args* a, Shape& s) {
  if (!a)
    return invalid("args: null pointer");
  QR_CHECK(check_shape(b, &a->shape, s));
  QR_CHECK(check_varlen(a->shape, a->cu_seqlens));
  if (!(a->scale >= 0.f))
    return invalid("scale: must be positive, or 0 for Dk^-0.5");
  const bool f = fused(b);
  QR_CHECK(check_tensor("q", a->q, false, f));
  QR_CHECK(check_tensor("k", a->k, false, f));
  QR_CHECK(check_tensor("v", a->v, false, f));
  QR_CHECK(check_tensor("beta", a->beta, false, false));
  QR_CHECK(check_tensor("g", a->g, false, false));
  return {};
}

Failure check_fwd(const Backend& b, const qr_gdn_forward_args* a, Shape& s) {
  QR_CHECK(check_inputs(b, a, s));
  const bool f = fused(b);
  QR_CHECK(check_tensor("o", a->o, true, f));
  QR_CHECK(check_state("initial_state", a->initial_state, f));
  QR_CHECK(check_state("final_state", a->final_state, f));
  QR_CHECK(
      check_buffer("workspace", a->workspace, a->workspace_bytes, b.workspace_bytes(s, Pass::fwd)));
  if (a->saved)
    QR_CHECK(check_buffer("saved", a->saved, a->saved_bytes, b.saved_bytes(s)));
  return {};
}

Failure check_bwd(const Backend& b, const qr_gdn_backward_args* a, Shape& s) {
  QR_CHECK(check_inputs(b, a, s));
  const bool f = fused(b);
  QR_CHECK(check_tensor("d_o", a->d_o, false, f));
  QR_CHECK(check_tensor("dq", a->dq, true, f));
  QR_CHECK(check_tensor("dk", a->dk, true, f));
  QR_CHECK(check_tensor("dv", a->dv, true, f));
  QR_CHECK(check_tensor("dbeta", a->dbeta, true, false));
  QR_CHECK(check_tensor("dg", a->dg, true, false));
  QR_CHECK(check_state("initial_state", a->initial_state, f));
  QR_CHECK(check_state("d_final_state", a->d_final_state, f));
  QR_CHECK(check_state("d_initial_state", a->d_initial_state, f));
  QR_CHECK(
      check_buffer("workspace", a->workspace, a->workspace_bytes, b.workspace_bytes(s, Pass::bwd)));
  if (a->saved)
    QR_CHECK(check_buffer("saved", a->saved, a->saved_bytes, b.saved_bytes(s)));
  return {};
}

template <class T>
TensorRef<T> tensor(const qr_gdn_tensor& t) {
  return {static_cast<T*>(t.data), t.stride_b, t.stride_t, t.stride_h};
}

Options options(float scale, int32_t l2norm_qk) {
  Options o;
  o.scale = scale;
  o.l2norm_qk = l2norm_qk != 0;
  return o;
}

// The launch-time check: the current device, which the shape checks could not see.
Failure check_device(const Backend& b, const Shape& s) {
  int dev = 0;
  DeviceInfo info;
  cudaError_t e = cudaGetDevice(&dev);
  if (e == cudaSuccess)
    e = cudaDeviceGetAttribute(&info.major, cudaDevAttrComputeCapabilityMajor, dev);
  if (e == cudaSuccess)
    e = cudaDeviceGetAttribute(&info.minor, cudaDevAttrComputeCapabilityMinor, dev);
  if (e == cudaSuccess)
    e = cudaDeviceGetAttribute(&info.sm_count, cudaDevAttrMultiProcessorCount, dev);
  if (e != cudaSuccess)
    return {QR_GDN_ERROR_CUDA, std::string("no usable CUDA device: ") + cudaGetErrorString(e)};
  if (std::string why = b.unsupported(info, s); !why.empty())
    return {QR_GDN_ERROR_NOT_SUPPORTED, b.name() + ": " + why + " (device " + std::to_string(dev) +
                                            " is sm_" + std::to_string(info.major) +
                                            std::to_string(info.minor) + ")"};
  return {};
}

// Runs `body` (returning a Failure), records its message, and maps exceptions to a status.
template <class F>
int32_t guarded(const char* fn, F&& body) {
  try {
    Failure f = body();
    last_error = f.failed() ? std::string(fn) + ": " + f.message : std::string();
    return f.status;
  } catch (const std::exception& e) {
    last_error = std::string(fn) + ": internal error: " + e.what();
  } catch (...) {
    last_error = std::string(fn) + ": internal error";
  }
  return QR_GDN_ERROR_INTERNAL;
}

Failure cuda_failure(const std::string& e) {
  return e.empty() ? Failure{} : Failure{QR_GDN_ERROR_CUDA, e};
}

} // namespace

extern "C" {

int32_t qr_gdn_abi_version(void) {
  return QR_GDN_ABI_VERSION;
}

const char* qr_gdn_last_error(void) {
  return last_error.c_str();
}

const char* qr_gdn_backend_name(int32_t backend) {
  switch (backend) {
  case QR_GDN_BACKEND_FUSED:
    return "fused";
  case QR_GDN_BACKEND_REFERENCE:
    return "reference";
  default:
    return nullptr;
  }
}

int32_t qr_gdn_check_shape(int32_t backend, const qr_gdn_shape* shape) {
  return guarded("qr_gdn_check_shape", [&]() -> Failure {
    const Backend* b = nullptr;
    QR_CHECK(find_backend(backend, b));
    Shape s;
    return check_shape(*b, shape, s);
  });
}

int32_t qr_gdn_workspace_size(int32_t backend, const qr_gdn_shape* shape, int32_t pass,
                              size_t* bytes) {
  return guarded("qr_gdn_workspace_size", [&]() -> Failure {
    const Backend* b = nullptr;
    QR_CHECK(find_backend(backend, b));
    if (!bytes)
      return invalid("bytes: null pointer");
    if (pass != QR_GDN_PASS_FORWARD && pass != QR_GDN_PASS_BACKWARD)
      return invalid("pass: unknown value " + std::to_string(pass) +
                     " (QR_GDN_PASS_FORWARD = 0, QR_GDN_PASS_BACKWARD = 1)");
    Shape s;
    QR_CHECK(check_shape(*b, shape, s));
    *bytes = b->workspace_bytes(s, pass == QR_GDN_PASS_FORWARD ? Pass::fwd : Pass::bwd);
    return {};
  });
}

int32_t qr_gdn_saved_size(int32_t backend, const qr_gdn_shape* shape, size_t* bytes) {
  return guarded("qr_gdn_saved_size", [&]() -> Failure {
    const Backend* b = nullptr;
    QR_CHECK(find_backend(backend, b));
    if (!bytes)
      return invalid("bytes: null pointer");
    Shape s;
    QR_CHECK(check_shape(*b, shape, s));
    *bytes = b->saved_bytes(s);
    return {};
  });
}

int32_t qr_gdn_check_forward(int32_t backend, const qr_gdn_forward_args* args) {
  return guarded("qr_gdn_check_forward", [&]() -> Failure {
    const Backend* b = nullptr;
    QR_CHECK(find_backend(backend, b));
    Shape s;
    return check_fwd(*b, args, s);
  });
}

int32_t qr_gdn_check_backward(int32_t backend, const qr_gdn_backward_args* args) {
  return guarded("qr_gdn_check_backward", [&]() -> Failure {
    const Backend* b = nullptr;
    QR_CHECK(find_backend(backend, b));
    Shape s;
    return check_bwd(*b, args, s);
  });
}

int32_t qr_gdn_forward(int32_t backend, const qr_gdn_forward_args* args, void* stream) {
  return guarded("qr_gdn_forward", [&]() -> Failure {
    const Backend* b = nullptr;
    QR_CHECK(find_backend(backend, b));
    Shape s;
    QR_CHECK(check_fwd(*b, args, s));
    QR_CHECK(check_device(*b, s));
    FwdArgs f;
    f.shape = s;
    f.opt = options(args->scale, args->l2norm_qk);
    f.q = tensor<const bf16_t>(args->q);
    f.k = tensor<const bf16_t>(args->k);
    f.v = tensor<const bf16_t>(args->v);
    f.beta = tensor<const bf16_t>(args->beta);
    f.g = tensor<const float>(args->g);
    f.initial_state = args->initial_state;
    f.o = tensor<bf16_t>(args->o);
    f.final_state = args->final_state;
    f.saved = b->saved_bytes(s) ? args->saved : nullptr;
    f.cu_seqlens = args->cu_seqlens;
    return cuda_failure(b->run_fwd(f, args->workspace, static_cast<Stream>(stream)));
  });
}

int32_t qr_gdn_backward(int32_t backend, const qr_gdn_backward_args* args, void* stream) {
  return guarded("qr_gdn_backward", [&]() -> Failure {
    const Backend* b = nullptr;
    QR_CHECK(find_backend(backend, b));
    Shape s;
    QR_CHECK(check_bwd(*b, args, s));
    QR_CHECK(check_device(*b, s));
    BwdArgs a;
    a.shape = s;
    a.opt = options(args->scale, args->l2norm_qk);
    a.q = tensor<const bf16_t>(args->q);
    a.k = tensor<const bf16_t>(args->k);
    a.v = tensor<const bf16_t>(args->v);
    a.beta = tensor<const bf16_t>(args->beta);
    a.g = tensor<const float>(args->g);
    a.initial_state = args->initial_state;
    a.d_o = tensor<const bf16_t>(args->d_o);
    a.d_final_state = args->d_final_state;
    a.dq = tensor<bf16_t>(args->dq);
    a.dk = tensor<bf16_t>(args->dk);
    a.dv = tensor<bf16_t>(args->dv);
    a.dbeta = tensor<bf16_t>(args->dbeta);
    a.dg = tensor<float>(args->dg);
    a.d_initial_state = args->d_initial_state;
    a.saved = b->saved_bytes(s) ? args->saved : nullptr;
    a.cu_seqlens = args->cu_seqlens;
    return cuda_failure(b->run_bwd(a, args->workspace, static_cast<Stream>(stream)));
  });
}

int32_t qr_gdn_input_error(int32_t backend, const void* workspace, void* stream) {
  return guarded("qr_gdn_input_error", [&]() -> Failure {
    const Backend* b = nullptr;
    QR_CHECK(find_backend(backend, b));
    if (!workspace)
      return invalid("workspace: null (pass the workspace of the run to check)");
    const std::string why = b->input_error(workspace, static_cast<Stream>(stream));
    if (why.empty())
      return {};
    // A failed wait or copy reads "cuda...: <error>"; the contract's verdict names the backend.
    const bool cuda = why.compare(0, 4, "cuda") == 0;
    return {cuda ? QR_GDN_ERROR_CUDA : QR_GDN_ERROR_INVALID_ARGUMENT, why};
  });
}

} // extern "C"
