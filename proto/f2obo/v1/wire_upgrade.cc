#include "f2obo/v1/wire_upgrade.h"

#include <string>
#include <utility>

#include "google/protobuf/message.h"
#include "google/protobuf/unknown_field_set.h"

namespace f2obo::v1 {
namespace {

using google::protobuf::UnknownFieldSet;

// Reads the unknown fields of `m` into `old`, whose numbers are the old
// top-level ones, and removes from `m` those `old` knows.  False when `m`
// has no unknown field.
bool TakeOldFields(google::protobuf::Message* m, google::protobuf::Message* old) {
  UnknownFieldSet* unknown = m->GetReflection()->MutableUnknownFields(m);
  if (unknown->empty()) return false;
  std::string bytes;
  if (!unknown->SerializeToString(&bytes) || !old->ParseFromString(bytes)) {
    old->Clear();  // a failed parse leaves what it read so far
    return false;  // not of the old layout: left as it is
  }
  UnknownFieldSet* rest = old->GetReflection()->MutableUnknownFields(old);
  unknown->Clear();
  unknown->MergeFrom(*rest);
  rest->Clear();
  return true;
}

}  // namespace

void UpgradeRoundReport(RoundReport* report) {
  BilevelRoundReport old;
  const bool had = TakeOldFields(report, &old);
  switch (report->problem_class_case()) {
    case RoundReport::PROBLEM_CLASS_NOT_SET:
      *report->mutable_bilevel() = std::move(old);
      break;
    case RoundReport::kMultitask:
      if (had) {
        MultitaskRoundReport* m = report->mutable_multitask();
        m->set_lambda(old.lambda());
        m->set_alpha(old.alpha());
        m->set_beta(old.beta());
        m->set_gamma(old.gamma());
        m->set_z_iterations(old.z_iterations());
        m->set_y_iterations(old.y_iterations());
        m->set_residual_z(old.residual_z());
        m->set_residual_y(old.residual_y());
        m->set_hypergradient_norm(old.hypergradient_norm());
        m->set_batch_size(old.batch_size());
        m->set_hyper_batch_size(old.hyper_batch_size());
      }
      break;
    default:  // the simple class's report had none of the bilevel fields
      break;
  }
}

void UpgradeRunningMetrics(RunningMetrics* running) {
  BilevelRunningMetrics old;
  const bool had = TakeOldFields(running, &old);
  switch (running->problem_class_case()) {
    case RunningMetrics::PROBLEM_CLASS_NOT_SET:
      *running->mutable_bilevel() = std::move(old);
      break;
    case RunningMetrics::kMultitask:
      if (had) {
        running->mutable_multitask()->set_blreg(old.blreg());
        running->mutable_multitask()->set_unconverged_steps(old.unconverged_steps());
      }
      break;
    default:
      break;
  }
}

void UpgradeExactMetrics(ExactMetrics* metrics) {
  BilevelExactMetrics old;
  const bool had = TakeOldFields(metrics, &old);
  switch (metrics->problem_class_case()) {
    case ExactMetrics::PROBLEM_CLASS_NOT_SET:
      *metrics->mutable_bilevel() = std::move(old);
      break;
    case ExactMetrics::kMultitask:
      if (had) {
        MultitaskExactMetrics* m = metrics->mutable_multitask();
        m->set_regret_term(old.regret_term());
        m->set_hypergradient_error(old.hypergradient_error());
        m->set_value(old.value());
        m->set_true_gradient_norm(old.true_gradient_norm());
        // The old layout set both flags to "every task converged".
        m->set_converged(old.inner_converged() && old.cg_converged());
      }
      break;
    default:
      break;
  }
  if (metrics->has_running()) UpgradeRunningMetrics(metrics->mutable_running());
}

void UpgradeStepReply(StepReply* reply) {
  if (reply->has_report()) UpgradeRoundReport(reply->mutable_report());
  if (reply->has_latest_exact()) UpgradeExactMetrics(reply->mutable_latest_exact());
}

}  // namespace f2obo::v1
