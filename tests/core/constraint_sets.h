// Shared by the constraint tests: every set of the class at a dimension,
// random points of a set (interior and boundary) and a polytope's vertices.
#ifndef F2OBO_TESTS_CORE_CONSTRAINT_SETS_H_
#define F2OBO_TESTS_CORE_CONSTRAINT_SETS_H_

#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/constraint.h"

namespace f2obo::testing {

inline constexpr double kInf = std::numeric_limits<double>::infinity();
inline constexpr int kDims[] = {1, 2, 3, 7, 20};

struct NamedSet {
  std::string name;
  ConstraintSet set;
};

Vector Gaussian(int d, std::mt19937_64& rng, double scale = 1.0);
// The sets of the class at dimension d (centres and per-coordinate bounds drawn).
std::vector<NamedSet> SetsAt(int d, std::mt19937_64& rng, bool with_unbounded);
// A random point of the set: half the time from its interior (by its own
// parametrization), half the time the projection of a far point (boundary).
Vector RandomFeasible(const ConstraintSet& set, int d, std::mt19937_64& rng);
// The vertices of a polytope (l1 ball, simplex, box up to 2^10 of them).
std::vector<Vector> Vertices(const ConstraintSet& set, int d);

}  // namespace f2obo::testing

#endif  // F2OBO_TESTS_CORE_CONSTRAINT_SETS_H_
