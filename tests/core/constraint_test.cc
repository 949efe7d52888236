#include "core/constraint.h"

#include <gtest/gtest.h>

namespace f2obo {
namespace {

TEST(ConstraintSet, BoxProjectionClampsEachCoordinateToItsOwnBounds) {
  ConstraintSet box;
  box.kind = ConstraintSet::Kind::kBox;
  box.lo = Vector::LinSpaced(3, -1.0, 1.0);  // -1, 0, 1
  box.hi = Vector::Constant(3, 2.0);
  ASSERT_TRUE(box.Validate(3).ok());
  Vector x(3);
  x << -5.0, 0.5, 9.0;
  box.Project(&x);
  EXPECT_EQ(x, (Vector(3) << -1.0, 0.5, 2.0).finished());
  EXPECT_FALSE(box.Validate(4).ok());  // per-coordinate bounds of the wrong size
}

TEST(ConstraintSet, BallProjectionScalesOntoTheSphere) {
  ConstraintSet ball = ConstraintSet::Ball(2.0);
  Vector x(2);
  x << 3.0, 4.0;
  ball.Project(&x);
  EXPECT_NEAR(x.norm(), 2.0, 1e-15);
  EXPECT_NEAR(x[0] / x[1], 0.75, 1e-15);
  Vector inside(2);
  inside << 0.1, -0.2;
  const Vector copy = inside;
  ball.Project(&inside);
  EXPECT_EQ(inside, copy);
  EXPECT_FALSE(ConstraintSet::Ball(0.0).Validate(2).ok());
}

TEST(GradientMapping, EqualsTheGradientInTheInteriorAndVanishesAtActiveBounds) {
  const ConstraintSet box = ConstraintSet::Box(-1.0, 1.0);
  Vector g(2), out(2);
  g << 0.3, -0.2;
  GradientMapping(box, Vector::Zero(2), g, 0.1, &out);
  EXPECT_NEAR((out - g).norm(), 0.0, 1e-15);
  // At x = 1 with a gradient pushing outward, the mapping is 0 (stationary).
  Vector x(2);
  x << 1.0, -1.0;
  g << -0.7, 0.5;
  GradientMapping(box, x, g, 0.1, &out);
  EXPECT_EQ(out.norm(), 0.0);
}

}  // namespace
}  // namespace f2obo
