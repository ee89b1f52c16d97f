/* The C ABI (kernels/capi/qr_gdn.h) as a C program sees it, with no GPU: the version, the size
 * queries (against the fused backend's documented workspace layout) and every argument check,
 * which must fail before any device work. Pointers are fake device addresses, never dereferenced.
 * Exits 0 when every check passes, 1 otherwise. */
#include "qr_gdn.h"

#include <stdio.h>
#include <string.h>

static int failures = 0;

#define CHECK(cond)                                                                                \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "%s:%d: CHECK(%s) failed; last error: %s\n", __FILE__, __LINE__, #cond,      \
              qr_gdn_last_error());                                                                \
      ++failures;                                                                                  \
    }                                                                                              \
  } while (0)

/* The status is `want` and the message contains `needle`. */
static void expect(int32_t got, int32_t want, const char* needle, int line) {
  const char* msg = qr_gdn_last_error();
  if (got != want || strstr(msg, needle) == NULL) {
    fprintf(stderr, "test_capi.c:%d: got status %d (want %d), message '%s' (want '%s')\n", line,
            got, want, msg, needle);
    ++failures;
  }
}
#define EXPECT(call, want, needle) expect((call), (want), (needle), __LINE__)

static qr_gdn_shape dense(int64_t B, int64_t T, int64_t Hk, int64_t Hv) {
  qr_gdn_shape s = {B, T, Hk, Hv, 128, 128, 0};
  return s;
}

/* 256-aligned fake device addresses, distinct per tensor. */
static void* addr(int i) {
  return (void*)(uintptr_t)(0x100000000ull + (uint64_t)i * 0x10000000ull);
}

static qr_gdn_tensor token_tensor(int i, const qr_gdn_shape* s, int64_t heads, int64_t dim) {
  qr_gdn_tensor t = {addr(i), s->seq_len * heads * dim, heads * dim, dim};
  return t;
}

static size_t ws_size(int32_t backend, const qr_gdn_shape* s, int32_t pass) {
  size_t bytes = 0;
  CHECK(qr_gdn_workspace_size(backend, s, pass, &bytes) == QR_GDN_OK);
  return bytes;
}

static qr_gdn_forward_args good_forward(const qr_gdn_shape* s, void* saved, size_t saved_bytes) {
  qr_gdn_forward_args a;
  memset(&a, 0, sizeof a);
  a.shape = *s;
  a.l2norm_qk = 1;
  a.q = token_tensor(1, s, s->key_heads, 128);
  a.k = token_tensor(2, s, s->key_heads, 128);
  a.v = token_tensor(3, s, s->value_heads, 128);
  a.beta = token_tensor(4, s, s->value_heads, 1);
  a.g = token_tensor(5, s, s->value_heads, 1);
  a.o = token_tensor(6, s, s->value_heads, 128);
  a.saved = saved;
  a.saved_bytes = saved_bytes;
  a.workspace = addr(7);
  a.workspace_bytes = ws_size(QR_GDN_BACKEND_FUSED, s, QR_GDN_PASS_FORWARD);
  return a;
}

static qr_gdn_backward_args good_backward(const qr_gdn_shape* s) {
  qr_gdn_backward_args a;
  memset(&a, 0, sizeof a);
  a.shape = *s;
  a.l2norm_qk = 1;
  a.q = token_tensor(1, s, s->key_heads, 128);
  a.k = token_tensor(2, s, s->key_heads, 128);
  a.v = token_tensor(3, s, s->value_heads, 128);
  a.beta = token_tensor(4, s, s->value_heads, 1);
  a.g = token_tensor(5, s, s->value_heads, 1);
  a.d_o = token_tensor(6, s, s->value_heads, 128);
  a.dq = token_tensor(8, s, s->key_heads, 128);
  a.dk = token_tensor(9, s, s->key_heads, 128);
  a.dv = token_tensor(10, s, s->value_heads, 128);
  a.dbeta = token_tensor(11, s, s->value_heads, 1);
  a.dg = token_tensor(12, s, s->value_heads, 1);
  a.workspace = addr(7);
  a.workspace_bytes = ws_size(QR_GDN_BACKEND_FUSED, s, QR_GDN_PASS_BACKWARD);
  return a;
}

/* The dense fused context (kernels/gdn/fused_workspace.cuh, Workspace), FLA's set: the stamp; per
 * key head qn, kn (bf16 [Tp, 128]) and rq, rk (fp32 [Tp]); per value head G (fp32 [Tp]) and A (bf16
 * [Tp, 64]); each piece rounded up to 256 bytes. */
static size_t round256(size_t n) {
  return (n + 255) / 256 * 256;
}
static size_t fused_context_bytes(const qr_gdn_shape* s) {
  const size_t NT = (size_t)(s->seq_len + 63) / 64, Tp = NT * 64;
  const size_t kh = (size_t)(s->batch * s->key_heads), vh = (size_t)(s->batch * s->value_heads);
  return 256 + 2 * round256(kh * Tp * 128 * 2) + round256(vh * Tp * 4) + 2 * round256(kh * Tp * 4) +
         round256(vh * Tp * 64 * 2);
}

static void test_version(void) {
  CHECK(qr_gdn_abi_version() == QR_GDN_ABI_VERSION);
  CHECK(qr_gdn_abi_version() / 1000 == QR_GDN_ABI_VERSION_MAJOR);
  CHECK(strcmp(qr_gdn_backend_name(QR_GDN_BACKEND_FUSED), "fused") == 0);
  CHECK(strcmp(qr_gdn_backend_name(QR_GDN_BACKEND_REFERENCE), "reference") == 0);
  CHECK(qr_gdn_backend_name(7) == NULL);
}

static void test_sizes(void) {
  const qr_gdn_shape s35 = dense(4, 4096, 16, 32), odd = dense(2, 1000, 2, 4);
  size_t bytes = 0;
  CHECK(qr_gdn_saved_size(QR_GDN_BACKEND_FUSED, &s35, &bytes) == QR_GDN_OK);
  CHECK(bytes == fused_context_bytes(&s35));
  CHECK(qr_gdn_saved_size(QR_GDN_BACKEND_FUSED, &odd, &bytes) == QR_GDN_OK);
  CHECK(bytes == fused_context_bytes(&odd));
  CHECK(qr_gdn_saved_size(QR_GDN_BACKEND_REFERENCE, &s35, &bytes) == QR_GDN_OK);
  CHECK(bytes == 0); /* the reference keeps no context */
  /* The backward without a context needs its own scratch; both grow with T. */
  const size_t fwd = ws_size(QR_GDN_BACKEND_FUSED, &s35, QR_GDN_PASS_FORWARD);
  const size_t bwd = ws_size(QR_GDN_BACKEND_FUSED, &s35, QR_GDN_PASS_BACKWARD);
  CHECK(fwd > 0 && bwd > fwd);
  const qr_gdn_shape longer = dense(4, 8192, 16, 32);
  CHECK(ws_size(QR_GDN_BACKEND_FUSED, &longer, QR_GDN_PASS_BACKWARD) > bwd);
  /* The reference forward needs only the input checks' status word. */
  CHECK(ws_size(QR_GDN_BACKEND_REFERENCE, &s35, QR_GDN_PASS_FORWARD) == 256);

  EXPECT(qr_gdn_saved_size(9, &s35, &bytes), QR_GDN_ERROR_INVALID_ARGUMENT, "backend: unknown");
  EXPECT(qr_gdn_saved_size(QR_GDN_BACKEND_FUSED, NULL, &bytes), QR_GDN_ERROR_INVALID_ARGUMENT,
         "shape: null");
  EXPECT(qr_gdn_saved_size(QR_GDN_BACKEND_FUSED, &s35, NULL), QR_GDN_ERROR_INVALID_ARGUMENT,
         "bytes: null");
  EXPECT(qr_gdn_workspace_size(QR_GDN_BACKEND_FUSED, &s35, 2, &bytes),
         QR_GDN_ERROR_INVALID_ARGUMENT, "pass: unknown");
}

static void test_shape_checks(void) {
  qr_gdn_shape s = dense(1, 64, 16, 40);
  EXPECT(qr_gdn_check_shape(QR_GDN_BACKEND_FUSED, &s), QR_GDN_ERROR_INVALID_ARGUMENT,
         "shape.value_heads: 40 is not a multiple of shape.key_heads (16)");
  s = dense(1, 0, 16, 32);
  EXPECT(qr_gdn_check_shape(QR_GDN_BACKEND_FUSED, &s), QR_GDN_ERROR_INVALID_ARGUMENT,
         "shape.seq_len: must be in 1..");
  s = dense(1, 64, 16, 32);
  s.head_dim_k = 64;
  EXPECT(qr_gdn_check_shape(QR_GDN_BACKEND_FUSED, &s), QR_GDN_ERROR_NOT_SUPPORTED,
         "fused: head dims must be 128 (got Dk 64, Dv 128)");
  CHECK(qr_gdn_check_shape(QR_GDN_BACKEND_REFERENCE, &s) == QR_GDN_OK); /* the oracle takes it */
  s.head_dim_k = 256;
  EXPECT(qr_gdn_check_shape(QR_GDN_BACKEND_REFERENCE, &s), QR_GDN_ERROR_NOT_SUPPORTED,
         "reference: head dims must be at most 128");
  s = dense(1, 64, 16, 32);
  s.num_seqs = -1;
  EXPECT(qr_gdn_check_shape(QR_GDN_BACKEND_FUSED, &s), QR_GDN_ERROR_INVALID_ARGUMENT,
         "shape.num_seqs");
  s = dense(2, 64, 16, 32);
  s.num_seqs = 3;
  EXPECT(qr_gdn_check_shape(QR_GDN_BACKEND_FUSED, &s), QR_GDN_ERROR_INVALID_ARGUMENT,
         "shape.batch: must be 1 with packed sequences");
  s = dense(4, 4096, 16, 32);
  CHECK(qr_gdn_check_shape(QR_GDN_BACKEND_FUSED, &s) == QR_GDN_OK);
  CHECK(strcmp(qr_gdn_last_error(), "") == 0); /* success clears the message */
}

static void test_forward_checks(void) {
  const qr_gdn_shape s = dense(2, 1000, 2, 4);
  size_t saved_bytes = 0;
  CHECK(qr_gdn_saved_size(QR_GDN_BACKEND_FUSED, &s, &saved_bytes) == QR_GDN_OK);
  qr_gdn_forward_args a = good_forward(&s, addr(13), saved_bytes);
  CHECK(qr_gdn_check_forward(QR_GDN_BACKEND_FUSED, &a) == QR_GDN_OK);

  /* Each tensor field by name: proves the struct layout a binding mirrors, field by field. */
  const char* names[] = {"q", "k", "v", "beta", "g", "o"};
  qr_gdn_tensor* fields[] = {&a.q, &a.k, &a.v, &a.beta, &a.g, &a.o};
  for (int i = 0; i < 6; ++i) {
    void* keep = fields[i]->data;
    char want[64];
    fields[i]->data = NULL;
    snprintf(want, sizeof want, "qr_gdn_check_forward: %s: null data pointer", names[i]);
    EXPECT(qr_gdn_check_forward(QR_GDN_BACKEND_FUSED, &a), QR_GDN_ERROR_INVALID_ARGUMENT, want);
    fields[i]->data = keep;
  }
  a.q.data = (char*)addr(1) + 8;
  EXPECT(qr_gdn_check_forward(QR_GDN_BACKEND_FUSED, &a), QR_GDN_ERROR_INVALID_ARGUMENT,
         "q: the fused backend needs 16-byte aligned rows");
  CHECK(qr_gdn_check_forward(QR_GDN_BACKEND_REFERENCE, &a) == QR_GDN_OK); /* any alignment */
  a.q.data = addr(1);
  a.v.stride_t = 4 * 128 + 4;
  EXPECT(qr_gdn_check_forward(QR_GDN_BACKEND_FUSED, &a), QR_GDN_ERROR_INVALID_ARGUMENT,
         "v: the fused backend needs 16-byte aligned rows");
  a.v.stride_t = 4 * 128;
  a.o.stride_h = 0;
  EXPECT(qr_gdn_check_forward(QR_GDN_BACKEND_FUSED, &a), QR_GDN_ERROR_INVALID_ARGUMENT,
         "o: strides (512000, 512, 0) must be positive");
  a.o.stride_h = 128;
  a.k.stride_b = -1;
  EXPECT(qr_gdn_check_forward(QR_GDN_BACKEND_FUSED, &a), QR_GDN_ERROR_INVALID_ARGUMENT,
         "k: strides (-1, 256, 128) must be non-negative");
  a.k = token_tensor(2, &s, 2, 128);
  a.final_state = (float*)((char*)addr(14) + 4);
  EXPECT(qr_gdn_check_forward(QR_GDN_BACKEND_FUSED, &a), QR_GDN_ERROR_INVALID_ARGUMENT,
         "final_state: must be 16-byte aligned");
  a.final_state = NULL;
  a.scale = -1.f;
  EXPECT(qr_gdn_check_forward(QR_GDN_BACKEND_FUSED, &a), QR_GDN_ERROR_INVALID_ARGUMENT,
         "scale: must be positive");
  a.scale = 0.f;

  a.workspace_bytes -= 1;
  EXPECT(qr_gdn_check_forward(QR_GDN_BACKEND_FUSED, &a), QR_GDN_ERROR_INVALID_ARGUMENT,
         "workspace_bytes:");
  a.workspace_bytes += 1;
  a.workspace = NULL;
  EXPECT(qr_gdn_check_forward(QR_GDN_BACKEND_FUSED, &a), QR_GDN_ERROR_INVALID_ARGUMENT,
         "workspace: null, but");
  a.workspace = (char*)addr(7) + 128;
  EXPECT(qr_gdn_check_forward(QR_GDN_BACKEND_FUSED, &a), QR_GDN_ERROR_INVALID_ARGUMENT,
         "workspace: must be 256-byte aligned");
  a.workspace = addr(7);
  a.saved_bytes = saved_bytes - 256;
  EXPECT(qr_gdn_check_forward(QR_GDN_BACKEND_FUSED, &a), QR_GDN_ERROR_INVALID_ARGUMENT,
         "saved_bytes:");
  a.saved = NULL; /* inference: no context */
  CHECK(qr_gdn_check_forward(QR_GDN_BACKEND_FUSED, &a) == QR_GDN_OK);

  /* cu_seqlens belongs with num_seqs (its values are the device's to check). */
  a.cu_seqlens = (const int32_t*)addr(15);
  EXPECT(qr_gdn_check_forward(QR_GDN_BACKEND_FUSED, &a), QR_GDN_ERROR_INVALID_ARGUMENT,
         "cu_seqlens: given, but shape.num_seqs is 0");
  qr_gdn_shape packed = dense(1, 1000, 2, 4);
  packed.num_seqs = 3;
  qr_gdn_forward_args v = good_forward(&packed, NULL, 0);
  EXPECT(qr_gdn_check_forward(QR_GDN_BACKEND_FUSED, &v), QR_GDN_ERROR_INVALID_ARGUMENT,
         "cu_seqlens: null, but shape.num_seqs is 3");
  v.cu_seqlens = (const int32_t*)((char*)addr(15) + 2);
  EXPECT(qr_gdn_check_forward(QR_GDN_BACKEND_FUSED, &v), QR_GDN_ERROR_INVALID_ARGUMENT,
         "cu_seqlens: must be 4-byte aligned");
  v.cu_seqlens = (const int32_t*)addr(15);
  CHECK(qr_gdn_check_forward(QR_GDN_BACKEND_FUSED, &v) == QR_GDN_OK);
  /* Workspace and context sizes depend on T and N only (gdn.h), so varlen sizes are dense's. */
  size_t dense_ctx = 0, packed_ctx = 0;
  const qr_gdn_shape one = dense(1, 1000, 2, 4);
  CHECK(qr_gdn_saved_size(QR_GDN_BACKEND_FUSED, &one, &dense_ctx) == QR_GDN_OK);
  CHECK(qr_gdn_saved_size(QR_GDN_BACKEND_FUSED, &packed, &packed_ctx) == QR_GDN_OK);
  CHECK(packed_ctx >= dense_ctx);
  v.shape.num_seqs = 1001;
  EXPECT(qr_gdn_check_forward(QR_GDN_BACKEND_FUSED, &v), QR_GDN_ERROR_INVALID_ARGUMENT,
         "shape.num_seqs: 1001 sequences in 1000 tokens");
  /* qr_gdn_forward runs the same checks first, so it fails the same way without a GPU. */
  EXPECT(qr_gdn_forward(QR_GDN_BACKEND_FUSED, &v, NULL), QR_GDN_ERROR_INVALID_ARGUMENT,
         "qr_gdn_forward: shape.num_seqs");
  EXPECT(qr_gdn_input_error(QR_GDN_BACKEND_FUSED, NULL, NULL), QR_GDN_ERROR_INVALID_ARGUMENT,
         "qr_gdn_input_error: workspace: null");
  EXPECT(qr_gdn_forward(QR_GDN_BACKEND_FUSED, NULL, NULL), QR_GDN_ERROR_INVALID_ARGUMENT,
         "qr_gdn_forward: args: null pointer");
}

static void test_backward_checks(void) {
  const qr_gdn_shape s = dense(1, 130, 1, 2);
  qr_gdn_backward_args a = good_backward(&s);
  CHECK(qr_gdn_check_backward(QR_GDN_BACKEND_FUSED, &a) == QR_GDN_OK);
  const char* names[] = {"q", "k", "v", "beta", "g", "d_o", "dq", "dk", "dv", "dbeta", "dg"};
  qr_gdn_tensor* fields[] = {&a.q,  &a.k,  &a.v,  &a.beta,  &a.g, &a.d_o,
                             &a.dq, &a.dk, &a.dv, &a.dbeta, &a.dg};
  for (int i = 0; i < 11; ++i) {
    void* keep = fields[i]->data;
    char want[64];
    fields[i]->data = NULL;
    snprintf(want, sizeof want, "qr_gdn_check_backward: %s: null data pointer", names[i]);
    EXPECT(qr_gdn_check_backward(QR_GDN_BACKEND_FUSED, &a), QR_GDN_ERROR_INVALID_ARGUMENT, want);
    fields[i]->data = keep;
  }
  a.d_initial_state = (float*)((char*)addr(16) + 8);
  EXPECT(qr_gdn_check_backward(QR_GDN_BACKEND_FUSED, &a), QR_GDN_ERROR_INVALID_ARGUMENT,
         "d_initial_state: must be 16-byte aligned");
  a.d_initial_state = NULL;
  size_t saved_bytes = 0;
  CHECK(qr_gdn_saved_size(QR_GDN_BACKEND_FUSED, &s, &saved_bytes) == QR_GDN_OK);
  a.saved = addr(13);
  a.saved_bytes = saved_bytes;
  CHECK(qr_gdn_check_backward(QR_GDN_BACKEND_FUSED, &a) == QR_GDN_OK);
  a.saved_bytes = 1;
  EXPECT(qr_gdn_check_backward(QR_GDN_BACKEND_FUSED, &a), QR_GDN_ERROR_INVALID_ARGUMENT,
         "saved_bytes: 1 given");
  a.saved_bytes = saved_bytes;
  a.workspace_bytes = 0;
  EXPECT(qr_gdn_backward(QR_GDN_BACKEND_FUSED, &a, NULL), QR_GDN_ERROR_INVALID_ARGUMENT,
         "qr_gdn_backward: workspace_bytes: 0 given");
}

int main(void) {
  test_version();
  test_sizes();
  test_shape_checks();
  test_forward_checks();
  test_backward_checks();
  if (failures) {
    fprintf(stderr, "test_capi: %d check(s) failed\n", failures);
    return 1;
  }
  printf("test_capi: all checks passed\n");
  return 0;
}
