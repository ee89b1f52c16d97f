// Which of the fused backend's kernels run their Hopper forms (fused_scan_hopper.cu,
// fused_bwd_scan_hopper.cu, fused_bwd_intra_ws.cu). On an sm_90 device all of them do unless
// QR_GDN_HOPPER_SCANS names a subset: a comma list of fwd, save, seg_fwd, bwd, seg_bwd,
// bwd_intra, or `none`. A diagnostic, to compare the two paths in one binary and to find which
// kernel is at fault when a run fails. Plain C++ (the CPU tests include it).
#pragma once

#include <algorithm>
#include <string>
#include <utility>

namespace qr::gdn::fused {

enum HopperScan : unsigned {
  kHopperFwd = 1,
  kHopperSave = 2,
  kHopperSegFwd = 4,
  kHopperBwd = 8,
  kHopperSegBwd = 16,
  kHopperIntra = 32,
  kHopperAll = 63, // unset: every kernel above
};

// The HopperScan bits that `list` (the variable's value; null: unset) selects, or an error
// naming the entry at fault.
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
      {"fwd", kHopperFwd},           {"save", kHopperSave},      {"seg_fwd", kHopperSegFwd},
      {"bwd", kHopperBwd},           {"seg_bwd", kHopperSegBwd}, {"bwd_intra", kHopperIntra}};
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

} // namespace qr::gdn::fused
