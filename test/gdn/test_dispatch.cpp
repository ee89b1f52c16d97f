// CPU tests of the fused backend's dispatch (kernels/gdn/dispatch.h): which kernels run for a
// shape, a device and QR_GDN_HOPPER_SCANS.
#include "dispatch.h"

#include <catch2/catch.hpp>

using namespace qr::gdn::fused;

TEST_CASE("QR_GDN_HOPPER_SCANS selects the scans that run their Hopper kernels") {
  using namespace qr::gdn::fused;
  unsigned bits = 0;
  CHECK(parse_hopper_scans(nullptr, bits).empty()); // unset: every scan
  CHECK(bits == kHopperAll);
  CHECK(parse_hopper_scans("none", bits).empty());
  CHECK(bits == 0);
  CHECK(parse_hopper_scans("fwd,seg_bwd", bits).empty());
  CHECK(bits == (kHopperFwd | kHopperSegBwd));
  CHECK(parse_hopper_scans("save,seg_fwd,bwd", bits).empty());
  CHECK(bits == (kHopperSave | kHopperSegFwd | kHopperBwd));
  CHECK(parse_hopper_scans("bwd_intra", bits).empty());
  CHECK(bits == kHopperIntra);
  CHECK(parse_hopper_scans("fwd,save,seg_fwd,bwd,seg_bwd,bwd_intra", bits).empty());
  CHECK(bits == kHopperAll);
  // the one-kernel backward (fused_bwd_hopper.cu) is gone: its name is an unknown entry
  CHECK(!parse_hopper_scans("save,fused_bwd", bits).empty());
  const std::string bad = parse_hopper_scans("fwd,bwd_scan", bits);
  CHECK(bad.find("QR_GDN_HOPPER_SCANS: unknown scan 'bwd_scan'") == 0);
  CHECK(!parse_hopper_scans("", bits).empty());     // an empty entry
  CHECK(!parse_hopper_scans("fwd,", bits).empty()); // a trailing comma
  CHECK(!parse_hopper_scans("none,fwd", bits).empty());
}

TEST_CASE("the sm_90 kernels run on sm_90 only, QR_GDN_HOPPER_SCANS read there alone") {
  unsigned bits = 1;
  CHECK(hopper_kernels(10, nullptr, bits).empty()); // sm_100: the sm80/ kernels
  CHECK(bits == 0);
  CHECK(hopper_kernels(8, "no-such-scan", bits).empty());
  CHECK(bits == 0);
  CHECK(hopper_kernels(9, nullptr, bits).empty());
  CHECK(bits == kHopperAll);
  CHECK(hopper_kernels(9, "bwd", bits).empty());
  CHECK(bits == kHopperBwd);
  CHECK(!hopper_kernels(9, "no-such-scan", bits).empty());
}

TEST_CASE("split_segments cuts a row when its (batch, value head) pairs leave SMs idle") {
  CHECK(split_segments(4, 32, 64) == 1);   // 128 pairs fill the card
  CHECK(split_segments(1, 8, 1024) == 16); // one wave of 128 CTAs
  CHECK(split_segments(1, 32, 64) == 4);   // 4 segments of 16 chunks
  CHECK(split_segments(1, 32, 63) == 1);   // 3 segments: not worth the transition scan
  CHECK(split_segments(1, 8, 100) == 6);   // by length: 16 chunks a segment at least
}

TEST_CASE("scan_grid: 128 columns once the CTAs fill the card, else 64; split or groups") {
  const ScanGrid dense = scan_grid(4, 32, 64, 0, 132, kHopperAll); // 35B
  CHECK((dense.bv == 128 && dense.groups == 1 && !dense.split && dense.hopper == kHopperAll));
  const ScanGrid wide = scan_grid(1, 64, 64, 0, 132, 0); // 397B: 64 pairs
  CHECK((wide.bv == 64 && wide.groups == 1 && !wide.split));
  const ScanGrid split = scan_grid(1, 8, 1024, 0, 132, 0);
  CHECK((split.bv == 128 && split.groups == 16 && split.split));
  // varlen: sequence groups per value head up to one wave, at most N
  const ScanGrid groups = scan_grid(1, 32, 40, 10, 132, 0);
  CHECK((groups.bv == 128 && groups.groups == 4 && !groups.split));
  CHECK(scan_grid(1, 32, 40, 2, 132, 0).groups == 2);
}

TEST_CASE("plan_bwd: the sm_90 pipeline, the scans side by side, or in sequence") {
  // 397B (64 pairs, 64-column scans of 128 CTAs): the pair fits one wave at 128 columns
  const ScanGrid sg397 = scan_grid(1, 64, 64, 0, 132, 0);
  const BwdPlan side = plan_bwd(1, 64, sg397, 132);
  CHECK(side.path == BwdPath::side_by_side);
  CHECK(side.scans.bv == 128);
  CHECK(!side.intra_sm90);
  // 35B (128 pairs, 128 CTAs a scan already): in sequence
  const ScanGrid sg35 = scan_grid(4, 32, 64, 0, 132, kHopperIntra);
  const BwdPlan seq = plan_bwd(4, 32, sg35, 132);
  CHECK(seq.path == BwdPath::in_sequence);
  CHECK(seq.scans.bv == 128);
  CHECK(seq.intra_sm90);
  // every kernel of the pipeline on sm_90: pipelined, on the pair's grid where it has one
  const BwdPlan piped = plan_bwd(1, 64, scan_grid(1, 64, 64, 0, 132, kHopperAll), 132);
  CHECK(piped.path == BwdPath::pipelined);
  CHECK(piped.scans.bv == 128);
  CHECK(piped.intra_sm90);
  CHECK(plan_bwd(4, 32, scan_grid(4, 32, 64, 0, 132, kHopperAll), 132).path == BwdPath::pipelined);
  // one of them on sm80/: not pipelined
  const unsigned no_save = kHopperAll & ~kHopperSave;
  CHECK(plan_bwd(1, 64, scan_grid(1, 64, 64, 0, 132, no_save), 132).path == BwdPath::side_by_side);
  // a split row: both scans' segment passes share the workspace, so never side by side
  const ScanGrid split = scan_grid(1, 8, 1024, 0, 132, 0);
  CHECK(plan_bwd(1, 8, split, 132).path == BwdPath::in_sequence);
  CHECK(pair_grid(1, 8, split, 132).bv == 0);
}
