// Which of the fused backend's kernels run, decided in this one place (as FlashAttention-3's
// heuristics.h) from the shape, the device (compute capability, SM count) and one environment
// variable; fused.cu launches what these pick, and the launchers of sm80/ and sm90/ decide nothing.
// Plain C++ (the CPU tests include it).
//
//   architecture  hopper_kernels: on sm_90 every kernel with an sm_90 form (sm90/) takes it,
//                 unless QR_GDN_HOPPER_SCANS names a subset; elsewhere the sm80/ kernels run
//   split         split_segments: a long sequence cut into segments across the card
//                 (sm80/fused_split.cu), from the shape alone
//   scan grid     scan_grid: value columns per scan CTA, then segments or sequence groups
//   backward      plan_bwd: the sm_90 pipeline, the two scans side by side, or one after another
#pragma once

#include <algorithm>
#include <string>
#include <utility>

namespace qr::gdn::fused {

// The kernels with an sm_90 form: fwd, save, seg_fwd (sm90/fused_scan.cu), bwd, seg_bwd
// (sm90/fused_bwd_scan.cu), bwd_intra (sm90/fused_bwd_intra.cu).
enum HopperScan : unsigned {
  kHopperFwd = 1,
  kHopperSave = 2,
  kHopperSegFwd = 4,
  kHopperBwd = 8,
  kHopperSegBwd = 16,
  kHopperIntra = 32,
  kHopperAll = 63, // unset: every kernel above
};

// The HopperScan bits that `list` selects, the value of QR_GDN_HOPPER_SCANS (null: unset): a comma
// list of fwd, save, seg_fwd, bwd, seg_bwd, bwd_intra, or `none`. A diagnostic, to compare the two
// paths in one binary and to find which kernel is at fault when a run fails. Else an error naming
// the entry at fault.
inline std::string parse_hopper_scans(const char* list, unsigned& bits) {
  bits = 0;
  if (!list) {
    bits = kHopperAll;
    return {};
  }
  const std::string text = list;
  if (text == "none")
    return {};
  static constexpr std::pair<const char*, unsigned> kNames[] = {
      {"fwd", kHopperFwd}, {"save", kHopperSave},      {"seg_fwd", kHopperSegFwd},
      {"bwd", kHopperBwd}, {"seg_bwd", kHopperSegBwd}, {"bwd_intra", kHopperIntra}};
  for (size_t at = 0; at <= text.size();) {
    const size_t end = std::min(text.find(',', at), text.size());
    const std::string name = text.substr(at, end - at);
    unsigned bit = 0;
    for (const auto& [known, b] : kNames)
      bit = name == known ? b : bit;
    if (!bit)
      return "QR_GDN_HOPPER_SCANS: unknown scan '" + name +
             "' (a comma list of fwd, save, seg_fwd, bwd, seg_bwd, bwd_intra, or none)";
    bits |= bit;
    at = end + 1;
  }
  return {};
}

// The kernels that take their sm_90 forms on a device of compute capability `major`, given
// QR_GDN_HOPPER_SCANS' value `env` (null: unset): none off sm_90, where the sm80/ kernels run
// (sm_100a / 103a).
inline std::string hopper_kernels(int major, const char* env, unsigned& bits) {
  if (major != 9) {
    bits = 0;
    return {};
  }
  return parse_hopper_scans(env, bits);
}

// Splitting a sequence inside the card (sm80/fused_split.cu): the scans cut each batch row
// (varlen: the packed row) into Z segments of NT / Z slots when its (batch, value head) pairs
// alone would leave SMs idle: Z = min(kSplitWave / (B Hv), NT / kMinSegmentChunks), and no split
// (1) below 4, where the extra transition scan costs more than the idle SMs (docs/gdn/kernels.md).
// From the shape alone, so the workspace size and the segments do not depend on the GPU.
constexpr int kSplitWave = 128; // CTAs a split aims for: one wave on 132 or 148 SMs
constexpr int kMinSegmentChunks = 16;
inline int split_segments(int B, int Hv, int NT) {
  const int by_wave = kSplitWave / (B * Hv), by_len = NT / kMinSegmentChunks;
  const int z = by_wave < by_len ? by_wave : by_len;
  return z >= 4 ? z : 1;
}

// The value columns a scan row spreads over its CTAs (Dv; geometry.cuh's kD).
constexpr int kScanColumns = 128;

// The scans' grid: value columns per CTA and gridDim.z: when split, the segments
// (split_segments), else, when varlen, sequence groups per value head.
struct ScanGrid {
  int bv, groups;
  bool split;
  unsigned hopper = 0; // HopperScan bits: the scans on their sm_90 kernels
};

// For B batch rows of Hv value heads and NT chunk slots (N varlen sequences, 0 dense) on
// sm_count SMs: split when the (batch, value head) pairs alone would leave SMs idle; else
// (varlen) as many sequence groups per value head as fill one wave of 128-column CTAs (at most
// N). BV is 128 when the CTAs fill three quarters of the SMs, so each CTA reads every tile once,
// and 64 when they do not, so that twice as many CTAs share the sequential work. (32 columns
// with one stage, two CTAs per SM, measured slower at the 397B shape: 262 / 305 us for the
// forward / backward scans against 233 / 233.)
inline ScanGrid scan_grid(int B, int Hv, int NT, int N, int sm_count, unsigned hopper) {
  const int segments = split_segments(B, Hv, NT);
  const int groups = segments > 1 ? segments : N ? std::max(1, std::min(N, sm_count / Hv)) : 1;
  return {4 * B * Hv * groups >= 3 * sm_count ? 128 : 64, groups, segments > 1, hopper};
}

inline int scan_ctas(int B, int Hv, ScanGrid sg) {
  return kScanColumns / sg.bv * B * Hv * sg.groups;
}

// The grid save_scan and bwd_scan share when they run side by side, or {0, 0} when they do not
// fit in one wave together (one CTA per SM each): scan_grid's if twice its CTAs fit, else its
// 128-column form (half the CTAs, each twice the columns) if that does. At the 397B shape the
// pair at 128 columns (64 + 64 CTAs) replaces two 128-CTA launches one after the other; at 35B
// (128 CTAs each already) they stay in sequence.
inline ScanGrid pair_grid(int B, int Hv, ScanGrid sg, int sms) {
  if (sg.split) // both scans' segment passes write ws.seg_end and ws.seg_move
    return {0, 0, false};
  if (2 * scan_ctas(B, Hv, sg) <= sms)
    return sg;
  const ScanGrid wide{128, sg.groups, false, sg.hopper};
  return 2 * scan_ctas(B, Hv, wide) <= sms ? wide : ScanGrid{0, 0, false};
}

// How the backward runs its scans (save_scan: h_n and v_new; bwd_scan: dh_n and dv_new) before
// bwd_intra.
enum class BwdPath {
  // sm_90 (save, bwd and bwd_intra on their sm_90 kernels): save_scan, then bwd_scan as its
  // programmatic dependent (side by side where both fit in one wave), then bwd_intra as
  // bwd_scan's, fed chunk by chunk (fused_pipeline.cuh), all on the caller's stream
  pipelined,
  // save_scan on a second stream beside bwd_scan, both in one wave; one after another when no
  // second stream can be made (a capture in progress)
  side_by_side,
  in_sequence, // save_scan, then bwd_scan
};

struct BwdPlan {
  BwdPath path;
  ScanGrid scans;  // the grid of both scans
  bool intra_sm90; // bwd_intra on its sm_90 kernel
};

// The backward's path for B batch rows of Hv value heads, the forward's scan grid sg, on sms SMs.
inline BwdPlan plan_bwd(int B, int Hv, ScanGrid sg, int sms) {
  const ScanGrid pg = pair_grid(B, Hv, sg, sms);
  constexpr unsigned kPipelined = kHopperSave | kHopperBwd | kHopperIntra;
  if ((sg.hopper & kPipelined) == kPipelined)
    return {BwdPath::pipelined, pg.bv ? pg : sg, true};
  const bool intra_sm90 = sg.hopper & kHopperIntra;
  if (pg.bv)
    return {BwdPath::side_by_side, pg, intra_sm90};
  return {BwdPath::in_sequence, sg, intra_sm90};
}

} // namespace qr::gdn::fused
