#include "tests/core/simple/algorithms/simple_test_support.h"

#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/simple/simple_registries.h"

namespace f2obo::testing {

RegisteredFamily::RegisteredFamily(const std::string& name, int features, int classes) {
  FamilyConfig config;
  config.name = name;
  config.features = features;
  config.classes = classes;
  absl::StatusOr<std::unique_ptr<SimpleFamily>> f = CreateSimpleFamily(config);
  EXPECT_TRUE(f.ok()) << f.status();
  if (f.ok()) f_ = *std::move(f);
}

Batch DenseBatch(const Matrix& rows, const Vector& targets) {
  Batch b;
  b.dense = rows;
  b.targets = targets;
  return b;
}

Batch Rows(const Matrix& a, const Vector& b, const std::vector<int>& idx) {
  Matrix rows(idx.size(), a.cols());
  Vector t(idx.size());
  for (size_t k = 0; k < idx.size(); ++k) {
    rows.row(k) = a.row(idx[k]);
    t[k] = b[idx[k]];
  }
  return DenseBatch(rows, t);
}

SimpleRun::SimpleRun(const SimpleAlgorithm& algorithm, const Vector& x0, uint64_t seed)
    : x(x0), decision(x0), rng(seed), aux(algorithm.InitialAux(x0)) {}

absl::Status SimpleRun::Step(SimpleAlgorithm& algorithm, SimpleFamily& family, const StepData& data,
                             SimpleReport* report) {
  SimpleReport local;
  SimpleVars v{t, x, decision, rng, aux};
  absl::Status st = algorithm.Round(data, family, &v, report != nullptr ? report : &local);
  if (st.ok()) ++t;
  return st;
}

bool SimpleRun::BitEquals(const SimpleRun& o) const {
  const auto same = [](const Vector& a, const Vector& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), sizeof(double) * a.size()) == 0;
  };
  if (t != o.t || !same(x, o.x) || !same(decision, o.decision) || !(rng == o.rng) ||
      aux.size() != o.aux.size()) {
    return false;
  }
  for (size_t i = 0; i < aux.size(); ++i) {
    if (!same(aux[i], o.aux[i])) return false;
  }
  return true;
}

std::unique_ptr<SimpleAlgorithm> MakeAlgorithm(const std::string& name, const ConstraintSet& z,
                                               int x_dim, void (*adjust)(AlgorithmOptions*),
                                               bool upper_reads_rows) {
  const SimpleAlgorithmEntry* e = FindSimpleAlgorithm(name);
  EXPECT_NE(e, nullptr) << name;
  if (e == nullptr) return nullptr;
  SimpleAlgorithmContext ctx;
  ctx.options = DefaultOptions(e->info);
  if (adjust != nullptr) adjust(&ctx.options);
  EXPECT_TRUE(ValidateAlgorithmOptions(e->info, ctx.options).ok());
  ctx.constraint = z;
  ctx.x_dim = x_dim;
  ctx.upper_reads_rows = upper_reads_rows;
  absl::StatusOr<std::unique_ptr<SimpleAlgorithm>> a = e->create(ctx);
  EXPECT_TRUE(a.ok()) << a.status();
  return a.ok() ? *std::move(a) : nullptr;
}

OverParameterizedRegression::OverParameterizedRegression(int features, int n_inner, int n_upper,
                                                         double noise, uint64_t seed) {
  Rng rng(seed);
  // Gaussian entries by Box-Muller on the session RNG (platform-independent).
  const auto normal = [&rng]() {
    const double u1 = (static_cast<double>(rng.Next() >> 11) + 0.5) * 0x1.0p-53;
    const double u2 = (static_cast<double>(rng.Next() >> 11) + 0.5) * 0x1.0p-53;
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
  };
  Vector x_true = Vector::Zero(features);
  for (int j = 0; j < 6; ++j) x_true[static_cast<int>(rng.UniformBelow(features))] = normal();
  x_true /= x_true.lpNorm<1>();
  a_inner.resize(n_inner, features);
  a_upper.resize(n_upper, features);
  for (int i = 0; i < n_inner; ++i)
    for (int j = 0; j < features; ++j) a_inner(i, j) = normal();
  for (int i = 0; i < n_upper; ++i)
    for (int j = 0; j < features; ++j) a_upper(i, j) = normal();
  b_inner = a_inner * x_true;
  b_upper = a_upper * x_true;
  for (int i = 0; i < n_upper; ++i) b_upper[i] += noise * normal();
  // KKT of min (1/2m)||A_u x - b_u||^2 s.t. A_i x = b_i.
  const int d = features, n = n_inner;
  Matrix kkt = Matrix::Zero(d + n, d + n);
  kkt.topLeftCorner(d, d) = a_upper.transpose() * a_upper / n_upper;
  kkt.topRightCorner(d, n) = a_inner.transpose();
  kkt.bottomLeftCorner(n, d) = a_inner;
  Vector rhs(d + n);
  rhs.head(d) = a_upper.transpose() * b_upper / n_upper;
  rhs.tail(n) = b_inner;
  x_star = kkt.fullPivLu().solve(rhs).head(d);
  f_star = FullF(x_star);
}

double OverParameterizedRegression::FullF(const VecIn& x) const {
  return 0.5 * (a_upper * x - b_upper).squaredNorm() / a_upper.rows();
}
double OverParameterizedRegression::FullG(const VecIn& x) const {
  return 0.5 * (a_inner * x - b_inner).squaredNorm() / a_inner.rows();
}

StepData OverParameterizedRegression::DrawStep(int per_kind, Rng* rng) const {
  std::vector<int> up(per_kind), in(per_kind);
  for (int& i : up) i = static_cast<int>(rng->UniformBelow(a_upper.rows()));
  for (int& i : in) i = static_cast<int>(rng->UniformBelow(a_inner.rows()));
  return StepData{Rows(a_upper, b_upper, up), Rows(a_inner, b_inner, in)};
}

StepData OverParameterizedRegression::CyclicStep(int64_t k, int upper_rows, int inner_rows) const {
  std::vector<int> up(upper_rows), in(inner_rows);
  for (int j = 0; j < upper_rows; ++j)
    up[j] = static_cast<int>((k * upper_rows + j) % a_upper.rows());
  for (int j = 0; j < inner_rows; ++j)
    in[j] = static_cast<int>((k * inner_rows + j) % a_inner.rows());
  return StepData{Rows(a_upper, b_upper, up), Rows(a_inner, b_inner, in)};
}

double LogLogSlope(const std::vector<double>& t, const std::vector<double>& v, double t_from) {
  double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] < t_from) continue;
    const double lx = std::log(t[i]), ly = std::log(v[i]);
    n += 1;
    sx += lx;
    sy += ly;
    sxx += lx * lx;
    sxy += lx * ly;
  }
  return (n * sxy - sx * sy) / (n * sxx - sx * sx);
}

std::vector<double> SuffixMax(const std::vector<double>& v) {
  std::vector<double> e(v);
  for (size_t i = e.size(); i-- > 1;) e[i - 1] = std::max(e[i - 1], e[i]);
  return e;
}

}  // namespace f2obo::testing
