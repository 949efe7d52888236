#include "core/bilevel/families/oracle_family.h"

#include <limits>

#include "absl/strings/str_cat.h"

namespace f2obo {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

absl::Span<const double> Span(const VecIn& v) {
  return absl::Span<const double>(v.data(), static_cast<size_t>(v.size()));
}

}  // namespace

absl::StatusOr<std::unique_ptr<BilevelFamily>> OracleFamily::Create(const FamilyConfig& config) {
  if (config.x_dim <= 0 || config.y_dim <= 0) {
    return absl::InvalidArgumentError(
        "family.x_dim, family.y_dim: the oracle family needs d1 = dim x > 0 and d2 = dim y > 0 "
        "(its client's model fixes them)");
  }
  return std::unique_ptr<BilevelFamily>(new OracleFamily(config.x_dim, config.y_dim));
}

absl::Status OracleFamily::ValidateBatch(const Batch& batch, BatchRole role) const {
  const char* what = role == BatchRole::kUpper ? "upper" : "inner";
  if (batch.oracle == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        what,
        " batch: family 'oracle' computes f and g on the client: step this session with "
        "OracleSteps (the step's data stays with the client), not Step or Steps"));
  }
  if (batch.oracle_rows < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, "_rows: ", batch.oracle_rows, ", must be >= 1"));
  }
  return absl::OkStatus();
}

void OracleFamily::Prepare(const StepData& data) { calls_.Use(data.upper.oracle); }

OracleQuery OracleFamily::Query(OracleQuery::Function fn, const VecIn& x, const VecIn& y,
                                const BatchView& view) {
  OracleQuery q;
  q.function = fn;
  q.x = Span(x);
  q.y = Span(y);
  q.rows = view.rows;
  q.task = view.batch->oracle_task;
  return q;
}

double OracleFamily::F(const VecIn& x, const VecIn& y, const BatchView& upper, Vector* gx,
                       Vector* gy) {
  double value = kNaN;
  OracleQuery q = Query(OracleQuery::Function::kF, x, y, upper);
  q.value = &value;
  q.grad_x = gx;
  q.grad_y = gy;
  calls_.Ask(absl::MakeSpan(&q, 1));
  return value;
}

double OracleFamily::G(const VecIn& x, const VecIn& y, const BatchView& inner, Vector* gx,
                       Vector* gy) {
  double value = kNaN;
  OracleQuery q = Query(OracleQuery::Function::kG, x, y, inner);
  q.value = &value;
  q.grad_x = gx;
  q.grad_y = gy;
  calls_.Ask(absl::MakeSpan(&q, 1));
  return value;
}

void OracleFamily::GradYGPair(const VecIn& x, const VecIn& y1, const VecIn& y2,
                              const BatchView& inner, Vector* gy1, Vector* gy2) {
  OracleQuery q[2] = {Query(OracleQuery::Function::kG, x, y1, inner),
                      Query(OracleQuery::Function::kG, x, y2, inner)};
  q[0].grad_y = gy1;
  q[1].grad_y = gy2;
  calls_.Ask(absl::MakeSpan(q));
}

void OracleFamily::InnerIterationGrads(const VecIn& x, const VecIn& z, const VecIn& y,
                                       const BatchView& upper, const BatchView& inner, Vector* gz,
                                       Vector* gy_g, Vector* gy_f) {
  OracleQuery q[3] = {Query(OracleQuery::Function::kG, x, z, inner),
                      Query(OracleQuery::Function::kG, x, y, inner),
                      Query(OracleQuery::Function::kF, x, y, upper)};
  q[0].grad_y = gz;
  q[1].grad_y = gy_g;
  q[2].grad_y = gy_f;
  calls_.Ask(absl::MakeSpan(q));
}

// One query fewer: f's and g's gradients in y at y as their sum (the
// answerer computes it, core/oracle.h OracleQuery.fused).
void OracleFamily::InnerIterationDirection(const VecIn& x, const VecIn& z, const VecIn& y,
                                           double lambda, const BatchView& upper,
                                           const BatchView& inner, Vector* gz, Vector* /*gy_g*/,
                                           Vector* d) {
  OracleQuery q[2] = {Query(OracleQuery::Function::kG, x, z, inner),
                      Query(OracleQuery::Function::kF, x, y, upper)};
  q[0].grad_y = gz;
  q[1].grad_y = d;
  q[1].fused = true;
  q[1].fuse_g = lambda;
  q[1].g_rows = inner.rows;
  calls_.Ask(absl::MakeSpan(q));
}

void OracleFamily::HypergradientDirection(const VecIn& x, const VecIn& y, const VecIn& z,
                                          double lambda, const BatchView& upper,
                                          const BatchView& inner, Vector* gx_f, Vector* gy_l,
                                          Vector* gx_g_y, Vector* /*gy_g*/, Vector* gx_g_z,
                                          Vector* gz) {
  // z's query first, as in the inner iterations (z_k, then y_k): an
  // answerer that keeps only the two latest points (a large model's
  // oracle stream, which asks one query a request) then still holds z_K
  // when it builds z_{K+1} from it, before y_{K+1} replaces the older one.
  std::array<OracleQuery, 3> q =
      HypergradientQueries(x, y, z, upper, inner, gx_f, gy_l, gx_g_y, gx_g_z, gz);
  q[1].fused = true;  // f's grad_y + lambda g's: grad_y L
  q[1].fuse_g = lambda;
  q[1].g_rows = inner.rows;
  calls_.Ask(absl::MakeSpan(q));
}

void OracleFamily::HypergradientGrads(const VecIn& x, const VecIn& y, const VecIn& z,
                                      const BatchView& upper, const BatchView& inner, Vector* gx_f,
                                      Vector* gy_f, Vector* gx_g_y, Vector* gy_g, Vector* gx_g_z,
                                      Vector* gz) {
  std::array<OracleQuery, 3> q =
      HypergradientQueries(x, y, z, upper, inner, gx_f, gy_f, gx_g_y, gx_g_z, gz);
  q[2].grad_y = gy_g;
  calls_.Ask(absl::MakeSpan(q));
}

std::array<OracleQuery, 3> OracleFamily::HypergradientQueries(
    const VecIn& x, const VecIn& y, const VecIn& z, const BatchView& upper, const BatchView& inner,
    Vector* gx_f, Vector* gy_f, Vector* gx_g_y, Vector* gx_g_z, Vector* gz) {
  std::array<OracleQuery, 3> q = {Query(OracleQuery::Function::kG, x, z, inner),
                                  Query(OracleQuery::Function::kF, x, y, upper),
                                  Query(OracleQuery::Function::kG, x, y, inner)};
  q[0].grad_x = gx_g_z;
  q[0].grad_y = gz;
  q[1].grad_x = gx_f;
  q[1].grad_y = gy_f;
  q[2].grad_x = gx_g_y;
  return q;
}

void OracleFamily::Unsupported(const char* what, Vector* out) {
  calls_.Unsupported(kName, what);
  if (out != nullptr) out->setConstant(kNaN);
}

void OracleFamily::HvpYYG(const VecIn&, const VecIn&, const BatchView&, const VecIn&, Vector* out) {
  Unsupported("grad2_yy g v", out);
}

void OracleFamily::HvpXYG(const VecIn&, const VecIn&, const BatchView&, const VecIn&, Vector* out) {
  Unsupported("grad2_xy g v", out);
}

void OracleFamily::HvpYYF(const VecIn&, const VecIn&, const BatchView&, const VecIn&, Vector* out) {
  Unsupported("grad2_yy f v", out);
}

Smoothness OracleFamily::EstimateSmoothness(const VecIn&, const VecIn&, const StepData&) {
  Unsupported("a smoothness estimate (HVPs)", nullptr);
  return Smoothness{kNaN, kNaN, SmoothnessSource::kNone};
}

}  // namespace f2obo
