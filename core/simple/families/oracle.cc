// `simple_oracle`: a simple bilevel family whose f and g the client
// computes (issue 27), f on its upper rows, g on its inner rows, both
// means over the rows a query names; the rows never reach the server.
// Queries carry x only (no y in this class).  x in R^d, d =
// FamilyConfig.x_dim.  f and g must be convex and smooth, as for any
// family of the class: the server cannot check it.
//
// What it answers: values and gradients (core/oracle.h).  What it does
// not: smoothness constants (AGM-BiO's power iteration on the Gram matrix)
// and the rows themselves, so the windowed algorithms (ir_fscg, agm_bio:
// AlgorithmInfo::keeps_rows) and the class's exact metrics (min_Z g on a
// window of rows) are refused at create; ir_scg, whose LMO stays on the
// server, is served.
#include "core/oracle.h"

#include <limits>

#include "absl/strings/str_cat.h"
#include "core/simple/families/simple_families.h"

namespace f2obo {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

class SimpleOracleFamily final : public SimpleFamily {
 public:
  explicit SimpleOracleFamily(int d) : d_(d) {}

  std::string_view name() const override { return "simple_oracle"; }
  int x_dim() const override { return d_; }
  bool rows_on_server() const override { return false; }
  absl::Status RoundFailure() const override { return calls_.failure(); }

  absl::Status ValidateBatch(const Batch& batch, BatchRole role) const override {
    const char* what = role == BatchRole::kUpper ? "upper" : "inner";
    if (batch.oracle == nullptr) {
      return absl::FailedPreconditionError(absl::StrCat(
          what,
          " batch: family 'simple_oracle' computes f and g on the client: step this session "
          "with OracleSteps (the step's data stays with the client), not Step or Steps"));
    }
    if (batch.oracle_rows < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, "_rows: ", batch.oracle_rows, ", must be >= 1"));
    }
    return absl::OkStatus();
  }

  double F(const VecIn& x, const BatchView& upper, Vector* grad) override {
    return Ask(OracleQuery::Function::kF, x, upper, grad);
  }
  double G(const VecIn& x, const BatchView& inner, Vector* grad) override {
    return Ask(OracleQuery::Function::kG, x, inner, grad);
  }
  // Never asked (agm_bio is refused); they fail the round if they are.
  double SmoothnessF(const BatchView&) override { return Unsupported("a smoothness bound of f"); }
  double SmoothnessG(const BatchView&) override { return Unsupported("a smoothness bound of g"); }

 private:
  double Ask(OracleQuery::Function fn, const VecIn& x, const BatchView& view, Vector* grad) {
    calls_.Use(view.batch->oracle);
    double value = kNaN;
    OracleQuery q;
    q.function = fn;
    q.x = absl::Span<const double>(x.data(), static_cast<size_t>(x.size()));
    q.rows = view.rows;
    q.value = &value;
    if (grad != nullptr) {
      grad->resize(d_);
      q.grad_x = grad;
    }
    calls_.Ask(absl::MakeSpan(&q, 1));
    return value;
  }
  double Unsupported(const char* what) {
    calls_.Unsupported(name(), what);
    return kNaN;
  }

  const int d_;
  OracleCalls calls_;  // the step's oracle (from the batches) and its failure
};

}  // namespace

absl::StatusOr<std::unique_ptr<SimpleFamily>> CreateSimpleOracleFamily(const FamilyConfig& config) {
  if (config.x_dim <= 0) {
    return absl::InvalidArgumentError(
        "family.x_dim: family 'simple_oracle' needs d = dim x > 0 (its client's model fixes it)");
  }
  return std::unique_ptr<SimpleFamily>(new SimpleOracleFamily(config.x_dim));
}

}  // namespace f2obo
