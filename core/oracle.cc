#include "core/oracle.h"

#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace f2obo {

bool IsOracleFamily(std::string_view family) {
  for (const char* name : kOracleFamilies) {
    if (family == name) return true;
  }
  return false;
}

void OracleCalls::Use(const std::shared_ptr<Oracle>& oracle) {
  if (oracle == oracle_) return;
  oracle_ = oracle;
  failure_ = absl::OkStatus();
}

void OracleCalls::Ask(absl::Span<OracleQuery> queries) {
  if (failure_.ok()) {
    failure_ = oracle_ != nullptr
                   ? oracle_->Evaluate(queries)
                   : absl::FailedPreconditionError("an oracle family was asked without an oracle");
  }
  if (failure_.ok()) return;
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  for (OracleQuery& q : queries) {
    if (q.value != nullptr) *q.value = kNaN;
    if (q.grad_x != nullptr) q.grad_x->setConstant(kNaN);
    if (q.grad_y != nullptr) q.grad_y->setConstant(kNaN);
  }
}

void OracleCalls::Unsupported(std::string_view family, std::string_view what) {
  if (!failure_.ok()) return;
  failure_ = absl::InternalError(absl::StrCat(
      "family '", std::string(family), "' was asked for ", std::string(what),
      ", which its client does not answer (the algorithm should have been refused at create)"));
}

absl::Status CheckOracleServes(std::string_view family, const AlgorithmInfo& info,
                               const AlgorithmOptions& o,
                               const std::vector<const AlgorithmInfo*>& algorithms) {
  const auto served = [&] {
    std::vector<std::string> names;
    for (const AlgorithmInfo* a : algorithms) {
      if (a->first_order && !a->keeps_rows) names.push_back(a->name);
    }
    return absl::StrJoin(names, ", ");
  };
  if (!info.first_order) {
    return absl::InvalidArgumentError(
        absl::StrCat("algorithm: '", info.name, "' needs Hessian-vector products, which family '",
                     std::string(family), "' does not answer; it serves ", served()));
  }
  if (info.keeps_rows) {
    return absl::InvalidArgumentError(absl::StrCat(
        "algorithm: '", info.name,
        "' keeps rows of past steps in the session's state (its window, options.window_rows), "
        "and family '",
        std::string(family), "' keeps its rows on the client; it serves ", served()));
  }
  const bool alpha_auto = info.reads.Has(Opt::alpha_auto) && AlphaIsAuto(o);
  const bool beta_auto = info.reads.Has(Opt::beta_auto) && BetaIsAuto(o);
  if ((alpha_auto || beta_auto) && !info.secant_steps) {
    return absl::InvalidArgumentError(absl::StrCat(
        "options.alpha_auto, options.beta_auto: automatic step sizes of '", info.name,
        "' estimate smoothness with Hessian-vector products, which family '", std::string(family),
        "' does not answer (f2obo and f2obo_sl take them from gradient differences); give "
        "alpha and beta"));
  }
  if (alpha_auto != beta_auto) {
    return absl::InvalidArgumentError(absl::StrCat(
        "options.alpha, options.beta: through family '", std::string(family),
        "' both inner steps are automatic (one step from gradient differences serves both "
        "loops) or both set; give both or neither"));
  }
  return absl::OkStatus();
}

}  // namespace f2obo
