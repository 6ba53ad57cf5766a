// Cable links against cable links on the backend: speeds, boxes, grid, pairs, compaction.
#include "models/collision/link_detector.h"

#include <algorithm>
#include <cmath>

#include "condsim/error.h"
#include "models/collision/detect_kernels.h"

namespace condsim {

LinkDetector::LinkDetector(Backend* backend, const std::vector<Index>& links_a, const std::vector<Index>& links_b, Index centres_a,
                           Index centres_b, bool self)
    : backend_(backend),
      num_a_(static_cast<Index>(links_a.size())),
      num_b_(static_cast<Index>(links_b.size())),
      centres_a_(centres_a),
      centres_b_(centres_b),
      self_(self) {
  for (Index s : links_a) CONDSIM_CHECK(s >= 0 && s + 1 < centres_a, "cable links: link " << s << " beyond cable a's centres");
  for (Index s : links_b) CONDSIM_CHECK(s >= 0 && s + 1 < centres_b, "cable links: link " << s << " beyond cable b's centres");
  kernels_ = MakeKernels<DetectKernels>(*backend);
  links_a_ = Array<Index>(backend, links_a);
  links_b_ = Array<Index>(backend, links_b);
  zeros_ = Array<Index>(backend, std::vector<Index>(std::size_t(std::max<Index>(num_b_, 1)), 0));
  speed_a_ = Array<Scalar>(backend, centres_a);
  speed_b_ = Array<Scalar>(backend, centres_b);
  lo_ = Array<Scalar>(backend, 3 * num_b_);
  hi_ = Array<Scalar>(backend, 3 * num_b_);
  ext_ = Array<Scalar>(backend, num_b_);
  count_ = Array<Index>(backend, std::max(num_a_, num_b_));
  offset_ = Array<Index>(backend, std::max(num_a_, num_b_));
  // a box spans at most 3 cells per axis (cell: the largest box side); 4 contacts per link
  keys_ = Array<std::uint64_t>(backend, 27 * num_b_);
  items_ = Array<Index>(backend, 27 * num_b_);
  hit_a_ = Array<Index>(backend, 4 * num_a_);
  hit_b_ = Array<Index>(backend, 4 * num_a_);
  hit_data_ = Array<Scalar>(backend, 9 * 4 * num_a_);
}

LinkDetector::~LinkDetector() = default;

const LinkHits& LinkDetector::Detect(const Array<Scalar>& xa, const Array<Scalar>& va, const Array<Scalar>& xb, const Array<Scalar>& vb,
                                     Scalar ra, Scalar rb, Scalar reach_extra, Index skip, Scalar dt, Scalar margin) {
  CONDSIM_CHECK(xa.size() >= 3 * centres_a_ && xb.size() >= 3 * centres_b_ && va.size() >= 6 * centres_a_ - 3 &&
                    vb.size() >= 6 * centres_b_ - 3,
                "cable links: positions need 3 values per centre and velocities 3 per node");
  hits_.a.clear();
  hits_.b.clear();
  hits_.data.clear();
  if (num_a_ == 0 || num_b_ == 0) return hits_;
  // reach: what two links can close within the step (DetectStage::CableLinks' arithmetic)
  kernels_->Run(centres_a_, LinkSpeedOp{va.data(), speed_a_.data()});
  kernels_->Run(centres_b_, LinkSpeedOp{vb.data(), speed_b_.data()});
  const Scalar speed = std::max(backend_->MaxAbs(speed_a_), backend_->MaxAbs(speed_b_));
  const Scalar reach = ra + rb + margin + 2 * dt * speed + reach_extra;
  kernels_->Run(num_b_, LinkBoxOp{links_b_.data(), xb.data(), reach, lo_.data(), hi_.data(), ext_.data()});
  const Scalar largest = backend_->MaxAbs(ext_);
  CONDSIM_CHECK(std::isfinite(largest), "cable links: a cable position or velocity is not finite");
  const DetectGrid grid{1 / (largest > 0 ? largest : Scalar(1)), 21};
  // the grid: (cell key, link) pairs sorted by key, links ascending within a cell
  kernels_->Run(num_b_, CellCountOp{lo_.data(), hi_.data(), grid, count_.data()});
  const Index num_pairs = backend_->ExclusiveScan(num_b_, count_, &offset_);
  if (keys_.size() < num_pairs) {
    keys_ = Array<std::uint64_t>(backend_, num_pairs + num_pairs / 2);
    items_ = Array<Index>(backend_, keys_.size());
  }
  kernels_->Run(num_b_, CellFillOp{lo_.data(), hi_.data(), grid, zeros_.data(), zeros_.data(), offset_.data(), keys_.data(), items_.data()});
  backend_->SortPairs(num_pairs, &keys_, &items_);
  // per link of a: count, scan, fill (ascending candidates), then the pairs' contacts
  const LinkCables cables{links_a_.data(), links_b_.data(), xa.data(), va.data(), xb.data(), vb.data()};
  LinkPairOp op{cables, lo_.data(), hi_.data(), keys_.data(), items_.data(), num_pairs, grid, self_ ? skip : 0, self_ ? 1 : 0,
                ra, rb, dt, margin, nullptr, count_.data(), nullptr, nullptr};
  kernels_->Run(num_a_, op);
  const Index total = backend_->ExclusiveScan(num_a_, count_, &offset_);
  if (total == 0) return hits_;
  if (hit_a_.size() < total) {
    const Index cap = total + total / 2;
    hit_a_ = Array<Index>(backend_, cap);
    hit_b_ = Array<Index>(backend_, cap);
    hit_data_ = Array<Scalar>(backend_, 9 * cap);
  }
  op.offset = offset_.data();
  op.out_a = hit_a_.data();
  op.out_b = hit_b_.data();
  kernels_->Run(num_a_, op);
  kernels_->Run(total, LinkGatherOp{cables, hit_a_.data(), hit_b_.data(), ra, rb, dt, margin, hit_data_.data()});
  hits_.a.resize(std::size_t(total));
  hits_.b.resize(std::size_t(total));
  hits_.data.resize(9 * std::size_t(total));
  backend_->CopyToHost(hits_.a.data(), hit_a_.data(), sizeof(Index) * std::size_t(total));
  backend_->CopyToHost(hits_.b.data(), hit_b_.data(), sizeof(Index) * std::size_t(total));
  backend_->CopyToHost(hits_.data.data(), hit_data_.data(), sizeof(Scalar) * 9 * std::size_t(total));
  return hits_;
}

}  // namespace condsim
