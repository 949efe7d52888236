// `simple_oracle`: a simple bilevel family whose f and g the client
// computes, f on its upper rows, g on its inner rows, both
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
//
// Round trips: ir_scg's iteration needs f and g at x_k, at x_{k-1} (its
// STORM correction, Giang-Tran et al. Alg. 1) and at the decision (the
// prequential losses).  They are independent, so StormPasses asks them all
// in one request, each query wanting only what the round reads.
#include "core/oracle.h"

#include <limits>
#include <vector>

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
  bool HasStormPass() const override { return true; }
  StormPassOut StormPass(const StormPassIn& in, Vector* estimate) override {
    StormPassOut out;
    StormPasses(absl::MakeConstSpan(&in, 1), absl::MakeConstSpan(&estimate, 1),
                absl::MakeSpan(&out, 1));
    return out;
  }
  void StormPasses(absl::Span<const StormPassIn> ins, absl::Span<Vector* const> estimates,
                   absl::Span<StormPassOut> out) override;

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
  // Scratch, one per pass: the gradients at x_k and at x_{k-1}.
  std::vector<Vector> grad_x_, grad_prev_;
};

void SimpleOracleFamily::StormPasses(absl::Span<const StormPassIn> ins,
                                     absl::Span<Vector* const> estimates,
                                     absl::Span<StormPassOut> out) {
  if (ins.empty()) return;
  // At most f's pass and g's (ir_scg), 3 queries each.
  std::vector<OracleQuery> queries;
  queries.reserve(3 * ins.size());
  grad_x_.resize(ins.size());
  grad_prev_.resize(ins.size());
  const auto span = [](const Vector& v) {
    return absl::Span<const double>(v.data(), static_cast<size_t>(v.size()));
  };
  for (size_t i = 0; i < ins.size(); ++i) {
    const StormPassIn& in = ins[i];
    calls_.Use(in.view->batch->oracle);
    const OracleQuery::Function fn =
        in.role == BatchRole::kUpper ? OracleQuery::Function::kF : OracleQuery::Function::kG;
    out[i] = StormPassOut{kNaN, kNaN};
    OracleQuery q;
    q.function = fn;
    q.rows = in.view->rows;
    q.x = span(*in.x);
    // Without x_{k-1} the estimate is the gradient at x_k itself.
    Vector* grad_x = in.prev == nullptr ? estimates[i] : &grad_x_[i];
    grad_x->resize(d_);
    q.grad_x = grad_x;
    q.value = in.value_x_read ? &out[i].value_x : nullptr;
    queries.push_back(q);
    if (in.prev != nullptr) {
      OracleQuery p = q;
      p.x = span(*in.prev);
      grad_prev_[i].resize(d_);
      p.grad_x = &grad_prev_[i];
      p.value = nullptr;
      queries.push_back(p);
    }
    if (in.at != nullptr) {
      OracleQuery a = q;
      a.x = span(*in.at);
      a.grad_x = nullptr;
      a.value = &out[i].value_at;
      queries.push_back(a);
    }
  }
  calls_.Ask(absl::MakeSpan(queries));
  for (size_t i = 0; i < ins.size(); ++i) {
    const StormPassIn& in = ins[i];
    if (in.prev == nullptr) continue;
    // estimate = keep (before - grad_prev) + grad_x, in IrScg::Storm's order
    // of operations, so an oracle session keeps its built-in twin's bits.
    Vector& e = *estimates[i];
    e = *in.before;
    e -= grad_prev_[i];
    e *= in.keep;
    e += grad_x_[i];
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<SimpleFamily>> CreateSimpleOracleFamily(const FamilyConfig& config) {
  if (config.x_dim <= 0) {
    return absl::InvalidArgumentError(
        "family.x_dim: family 'simple_oracle' needs d = dim x > 0 (its client's model fixes it)");
  }
  return std::unique_ptr<SimpleFamily>(new SimpleOracleFamily(config.x_dim));
}

}  // namespace f2obo
