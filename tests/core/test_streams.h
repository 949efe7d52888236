// Synthetic streams and session builders shared by core tests.
#ifndef F2OBO_TESTS_CORE_TEST_STREAMS_H_
#define F2OBO_TESTS_CORE_TEST_STREAMS_H_

#include <memory>
#include <random>
#include <string>

#include "core/bilevel/bilevel_state.h"
#include "core/session.h"

namespace f2obo::testing {

// An m x n matrix (m >= n) with singular values spread in [lo, hi].
Matrix WellConditioned(int m, int n, double lo, double hi, std::mt19937_64& rng);

// Quadratic step with least-squares f: g's M, c on the inner batch, d upper.
StepData QuadraticStep(const Matrix& M, const Vector& c, const Vector& d);

// A ridge/linear-regression batch: rows a_i ~ N(0, I), b = a^T w + noise.
Batch RegressionBatch(int rows, const Vector& w, double noise, bool sparse, std::mt19937_64& rng);

// A classification batch for softmax families: rows ~ N(mean_label, I).
Batch ClassificationBatch(int rows, int features, int classes, bool sparse, std::mt19937_64& rng);

// Session config with the registry defaults of `algorithm` applied.
SessionConfig ConfigFor(const std::string& algorithm, const FamilyConfig& family,
                        const ConstraintSet& set);

// A fresh instance of the session's family, prepared for `data` (to query
// the family the session's round used, e.g. for exact metrics).
std::unique_ptr<BilevelFamily> PreparedFamily(const Session& session, const StepData& data);

// A bilevel-shaped state (for driving an algorithm directly through
// BilevelView): x, y, z, lambda, seeded RNG, t = 1.
SessionState BilevelState(const Vector& x, const Vector& y, const Vector& z, double lambda,
                          uint64_t seed = 1);

}  // namespace f2obo::testing

#endif  // F2OBO_TESTS_CORE_TEST_STREAMS_H_
