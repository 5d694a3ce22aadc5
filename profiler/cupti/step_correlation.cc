#include "profiler/cupti/step_correlation.h"

namespace memplan::profiler {
namespace {

uint64_t NowOrZero() {
  auto t = CuptiCollector::Timestamp();
  return t.ok() ? *t : 0;
}

}  // namespace

void AllocatorCorrelation::BeforeDeviceCall() {
  const Status s = collector_.Push(CorrelationDomain::kAllocator, ++next_id_);
  if (status_.ok() && !s.ok()) status_ = s;
}

void AllocatorCorrelation::AfterDeviceCall() {
  const Status s = collector_.Pop(CorrelationDomain::kAllocator, next_id_);
  if (status_.ok() && !s.ok()) status_ = s;
}

void StepCorrelation::CloseOpenStep() {
  if (!open_) return;
  steps_.back().host_end_ns = NowOrZero();
  Keep(collector_.Pop(CorrelationDomain::kStep, steps_.back().external_id));
  open_ = false;
}

void StepCorrelation::OnEnterStep(const StepSite& site) {
  CloseOpenStep();
  if (site.step < 0 || site.step >= static_cast<int64_t>(program_.steps.size())) return;
  // Ids start at 1: 0 reads as "none" in some CUPTI tools.
  ProfiledStep entry = DescribeStep(program_, site.step, site.micro_batch, ++next_id_);
  entry.host_start_ns = NowOrZero();
  const Status pushed = collector_.Push(CorrelationDomain::kStep, entry.external_id);
  Keep(pushed);
  steps_.push_back(std::move(entry));
  open_ = pushed.ok();
}

Status StepCorrelation::Finish() {
  CloseOpenStep();
  return status_;
}

}  // namespace memplan::profiler
