/* qr_gdn: the C ABI of our GatedDeltaNet kernels (libqwen_gdn.so), for training frameworks.
 *
 * Semantics are FLA's chunk_gated_delta_rule (kernels/gdn/gdn.h states them): per batch b and value
 * head h (key head h / (Hv / Hk)), state S (Dk x Dv, fp32),
 *   q_t, k_t <- q_t / sqrt(|q_t|^2 + 1e-6), likewise k_t      (only when l2norm_qk)
 *   S_t = exp(g_t) S_{t-1} + beta_t k_t (v_t - exp(g_t) S_{t-1}^T k_t)^T,  o_t = scale S_t^T q_t
 * q, k, v, beta, o and their gradients are bf16; g and dg fp32 (natural-log decay); states fp32,
 * contiguous [N, Hv, Dk, Dv] (N = batch, or num_seqs when packed). Token tensors are [B, T, H, D]
 * (or [B, T, H] for g and beta) given as a base pointer and element strides for B, T and H; the
 * last dimension is contiguous. Every pointer is device memory of the calling thread's current
 * CUDA device, and every call enqueues on `stream` only (no synchronisation, no allocation), so
 * calls can be captured into a CUDA graph.
 *
 * Versioning: QR_GDN_ABI_VERSION is MAJOR * 1000 + MINOR. The major changes whenever a struct's
 * layout or a function's meaning changes (the shared library's soname carries it), the minor when
 * something is added. Compare qr_gdn_abi_version() with the header you built against.
 *
 * Errors: every function returns a qr_gdn_status; on failure qr_gdn_last_error() gives a one-line
 * message naming the argument at fault (thread-local, valid until the thread's next call).
 * Arguments are checked before any device work; the checks need no GPU (qr_gdn_check_forward,
 * qr_gdn_check_backward run them alone). What only the data can show (g <= 0 and finite, the
 * cu_seqlens offsets, a saved context from a matching forward) the kernels check on the device,
 * into the workspace: qr_gdn_input_error reads the verdict after a run.
 */
#ifndef QR_GDN_H
#define QR_GDN_H

#include <stddef.h>
#include <stdint.h>

#define QR_GDN_ABI_VERSION_MAJOR 1
#define QR_GDN_ABI_VERSION_MINOR 0
#define QR_GDN_ABI_VERSION (QR_GDN_ABI_VERSION_MAJOR * 1000 + QR_GDN_ABI_VERSION_MINOR)

#if defined(QR_GDN_BUILDING)
#define QR_GDN_API __attribute__((visibility("default")))
#else
#define QR_GDN_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef enum qr_gdn_status {
  QR_GDN_OK = 0,
  QR_GDN_ERROR_INVALID_ARGUMENT = 1, /* a null, misshapen, misaligned or too small argument */
  QR_GDN_ERROR_NOT_SUPPORTED = 2,    /* valid, but not covered: head dims, the device */
  QR_GDN_ERROR_CUDA = 3,             /* a CUDA call failed (no device, launch error) */
  QR_GDN_ERROR_INTERNAL = 4          /* out of host memory or a bug */
} qr_gdn_status;

typedef enum qr_gdn_backend {
  QR_GDN_BACKEND_FUSED = 0,    /* the Hopper training kernels (sm_90+, Dk = Dv = 128) */
  QR_GDN_BACKEND_REFERENCE = 1 /* the fp32 oracle: one thread block per (b, h), slow */
} qr_gdn_backend;

typedef enum qr_gdn_pass { QR_GDN_PASS_FORWARD = 0, QR_GDN_PASS_BACKWARD = 1 } qr_gdn_pass;

typedef struct qr_gdn_shape {
  int64_t batch, seq_len;
  int64_t key_heads, value_heads; /* Hk (q, k) and Hv (v, g, beta, o), Hv a multiple of Hk */
  int64_t head_dim_k, head_dim_v;
  /* 0: dense. > 0: packed variable-length sequences (FLA's cu_seqlens): batch is 1, the
   * arguments' cu_seqlens holds num_seqs + 1 int32 offsets on the device, rising strictly from 0
   * to seq_len (every sequence at least one token), and states are [num_seqs, Hv, Dk, Dv]. */
  int64_t num_seqs;
} qr_gdn_shape;

/* A [B, T, H, D] or [B, T, H] tensor: base pointer and element strides of B, T and H. */
typedef struct qr_gdn_tensor {
  void* data;
  int64_t stride_b, stride_t, stride_h;
} qr_gdn_tensor;

typedef struct qr_gdn_forward_args {
  qr_gdn_shape shape;
  float scale;                 /* 0 means Dk^-0.5 */
  int32_t l2norm_qk;           /* non-zero: normalise q and k in the kernel (FLA's eps 1e-6) */
  const int32_t* cu_seqlens;   /* [num_seqs + 1] when shape.num_seqs > 0, else null */
  qr_gdn_tensor q, k, v, beta; /* bf16 */
  qr_gdn_tensor g;             /* fp32 */
  const float* initial_state;  /* optional */
  qr_gdn_tensor o;             /* bf16, written */
  float* final_state;          /* optional, written */
  /* A training forward writes the context its backward reads here (qr_gdn_saved_size bytes,
   * 256-byte aligned); null for inference, or where the backend keeps none (size 0). */
  void* saved;
  size_t saved_bytes;
  void* workspace; /* qr_gdn_workspace_size(..., QR_GDN_PASS_FORWARD) bytes, 256-byte aligned */
  size_t workspace_bytes;
} qr_gdn_forward_args;

typedef struct qr_gdn_backward_args {
  qr_gdn_shape shape;
  float scale;
  int32_t l2norm_qk;
  const int32_t* cu_seqlens;
  qr_gdn_tensor q, k, v, beta, g;  /* the forward's inputs */
  const float* initial_state;      /* optional, as in the forward */
  qr_gdn_tensor d_o;               /* bf16 gradient of o */
  const float* d_final_state;      /* optional gradient of the final state */
  qr_gdn_tensor dq, dk, dv, dbeta; /* bf16, written */
  qr_gdn_tensor dg;                /* fp32, written */
  float* d_initial_state;          /* optional, written */
  /* The context a training forward on the same inputs and options left, or null: the backward
   * then recomputes it (slower). */
  const void* saved;
  size_t saved_bytes;
  void* workspace; /* qr_gdn_workspace_size(..., QR_GDN_PASS_BACKWARD) bytes, 256-byte aligned */
  size_t workspace_bytes;
} qr_gdn_backward_args;

/* QR_GDN_ABI_VERSION of the library. */
QR_GDN_API int32_t qr_gdn_abi_version(void);
/* The last failing call's message on this thread ("" after success). */
QR_GDN_API const char* qr_gdn_last_error(void);
/* "fused", "reference"; null for an unknown value. */
QR_GDN_API const char* qr_gdn_backend_name(int32_t backend);

/* Whether `backend` covers the shape (QR_GDN_OK, or NOT_SUPPORTED / INVALID_ARGUMENT and why).
 * Needs no device. */
QR_GDN_API int32_t qr_gdn_check_shape(int32_t backend, const qr_gdn_shape* shape);
/* Device scratch a pass needs, bytes. Needs no device. */
QR_GDN_API int32_t qr_gdn_workspace_size(int32_t backend, const qr_gdn_shape* shape, int32_t pass,
                                         size_t* bytes);
/* Bytes of the context a training forward keeps for the backward; 0 when the backend keeps none.
 * Needs no device. */
QR_GDN_API int32_t qr_gdn_saved_size(int32_t backend, const qr_gdn_shape* shape, size_t* bytes);

/* Every check of qr_gdn_forward / qr_gdn_backward that needs no device, and nothing else. */
QR_GDN_API int32_t qr_gdn_check_forward(int32_t backend, const qr_gdn_forward_args* args);
QR_GDN_API int32_t qr_gdn_check_backward(int32_t backend, const qr_gdn_backward_args* args);

/* Check, then enqueue the pass on `stream` (a cudaStream_t; null is the legacy default stream). */
QR_GDN_API int32_t qr_gdn_forward(int32_t backend, const qr_gdn_forward_args* args, void* stream);
QR_GDN_API int32_t qr_gdn_backward(int32_t backend, const qr_gdn_backward_args* args, void* stream);

/* Waits for `stream`, then reports whether the last run given `workspace` met inputs outside the
 * contract (its outputs are then undefined): QR_GDN_OK when not, QR_GDN_ERROR_INVALID_ARGUMENT and
 * the reason when it did. Synchronises: skip it while capturing a CUDA graph. */
QR_GDN_API int32_t qr_gdn_input_error(int32_t backend, const void* workspace, void* stream);

#ifdef __cplusplus
}
#endif

#endif /* QR_GDN_H */
