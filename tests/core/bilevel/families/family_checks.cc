#include "tests/core/bilevel/families/family_checks.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace f2obo::testing {
namespace {

constexpr double kStep = 1e-5;

double RelErr(double fd, double an, double floor) {
  return std::abs(fd - an) / std::max({std::abs(an), std::abs(fd), floor});
}

double RelErr(const Vector& fd, const Vector& an, double floor) {
  return (fd - an).norm() / std::max({an.norm(), fd.norm(), floor});
}

Vector UnitDirection(int n, std::mt19937_64& rng) {
  Vector v = RandomVector(n, rng);
  return v / v.norm();
}

}  // namespace

double FdErrors::Max() const {
  return std::max({grad_x_f, grad_y_f, grad_x_g, grad_y_g, hvp_yy_g, hvp_xy_g, hvp_yy_f, pair});
}

Vector RandomVector(int n, std::mt19937_64& rng, double scale) {
  std::normal_distribution<double> normal(0.0, scale);
  Vector v(n);
  for (int i = 0; i < n; ++i) v[i] = normal(rng);
  return v;
}

RowMatrix RandomMatrix(int rows, int cols, std::mt19937_64& rng) {
  std::normal_distribution<double> normal(0.0, 1.0);
  RowMatrix m(rows, cols);
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) m(i, j) = normal(rng);
  return m;
}

CsrMatrix RandomCsr(int rows, int cols, double density, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<Eigen::Triplet<double>> t;
  for (int i = 0; i < rows; ++i) {
    t.emplace_back(i, static_cast<int>(u(rng) * cols) % cols, normal(rng));
    for (int j = 0; j < cols; ++j)
      if (u(rng) < density) t.emplace_back(i, j, normal(rng));
  }
  CsrMatrix m(rows, cols);
  m.setFromTriplets(t.begin(), t.end(), [](double a, double) { return a; });
  m.makeCompressed();
  return m;
}

FdErrors CheckFamilyDerivatives(BilevelFamily& family, const StepData& data, const Vector& x,
                                const Vector& y, std::mt19937_64& rng, int directions) {
  family.Prepare(data);
  const BatchView up = BatchView::All(data.upper);
  const BatchView in = BatchView::All(data.inner);
  const int d1 = family.x_dim(), d2 = family.y_dim();
  Vector gxf(d1), gyf(d2), gxg(d1), gyg(d2);
  family.F(x, y, up, &gxf, &gyf);
  family.G(x, y, in, &gxg, &gyg);
  FdErrors e;
  Vector a(d1), b(d1), c(d2), d(d2), hv(d2), hx(d1);
  for (int k = 0; k < directions; ++k) {
    const Vector u = UnitDirection(d1, rng);
    const Vector v = UnitDirection(d2, rng);
    const Vector xp = x + kStep * u, xm = x - kStep * u;
    const Vector yp = y + kStep * v, ym = y - kStep * v;
    // First derivatives of the values.
    e.grad_x_f = std::max(e.grad_x_f, RelErr((family.F(xp, y, up, nullptr, nullptr) -
                                              family.F(xm, y, up, nullptr, nullptr)) /
                                                 (2 * kStep),
                                             gxf.dot(u), std::max(gxf.norm(), 1e-8)));
    e.grad_y_f = std::max(e.grad_y_f, RelErr((family.F(x, yp, up, nullptr, nullptr) -
                                              family.F(x, ym, up, nullptr, nullptr)) /
                                                 (2 * kStep),
                                             gyf.dot(v), std::max(gyf.norm(), 1e-8)));
    e.grad_x_g = std::max(e.grad_x_g, RelErr((family.G(xp, y, in, nullptr, nullptr) -
                                              family.G(xm, y, in, nullptr, nullptr)) /
                                                 (2 * kStep),
                                             gxg.dot(u), std::max(gxg.norm(), 1e-8)));
    e.grad_y_g = std::max(e.grad_y_g, RelErr((family.G(x, yp, in, nullptr, nullptr) -
                                              family.G(x, ym, in, nullptr, nullptr)) /
                                                 (2 * kStep),
                                             gyg.dot(v), std::max(gyg.norm(), 1e-8)));
    // HVPs from differences of gradients along v.
    family.G(x, yp, in, &a, &c);
    family.G(x, ym, in, &b, &d);
    family.HvpYYG(x, y, in, v, &hv);
    e.hvp_yy_g = std::max(e.hvp_yy_g, RelErr((c - d) / (2 * kStep), hv, 1e-8));
    family.HvpXYG(x, y, in, v, &hx);
    e.hvp_xy_g = std::max(e.hvp_xy_g, RelErr((a - b) / (2 * kStep), hx, 1e-8));
    family.F(x, yp, up, nullptr, &c);
    family.F(x, ym, up, nullptr, &d);
    family.HvpYYF(x, y, up, v, &hv);
    e.hvp_yy_f = std::max(e.hvp_yy_f, RelErr((c - d) / (2 * kStep), hv, 1e-8));
    // The fused pass must agree with separate evaluations.
    const Vector y2 = y + 0.3 * v;
    family.GradYGPair(x, y, y2, in, &c, &d);
    Vector c2(d2), d2v(d2);
    family.G(x, y, in, nullptr, &c2);
    family.G(x, y2, in, nullptr, &d2v);
    e.pair = std::max(e.pair, std::max(RelErr(c, c2, 1e-12), RelErr(d, d2v, 1e-12)));
  }
  return e;
}

Batch SubsetOf(const Batch& b, const std::vector<int>& rows) {
  Batch s;
  s.dense = b.dense(rows, Eigen::all);
  for (int r : rows) s.labels.push_back(b.labels[r]);
  return s;
}

}  // namespace f2obo::testing
