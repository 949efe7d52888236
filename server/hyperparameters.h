// The names under which a session's decision x is shown (the dashboard,
// f2obo_session_hyperparameter{name}): the spec's x_groups, or for a small
// x one group per entry.  Display only: rounds never read them.
#ifndef F2OBO_SERVER_HYPERPARAMETERS_H_
#define F2OBO_SERVER_HYPERPARAMETERS_H_

#include <vector>

#include "absl/types/span.h"
#include "core/session_config.h"
#include "f2obo/v1/f2obo.pb.h"

namespace f2obo::server {

// An x of at most this many entries without named groups is shown entry by
// entry; a larger one is not shown (its entries would flood the series).
inline constexpr int kMaxDefaultXGroups = 16;

// The groups x's entries are shown in: `config.x_groups`, else "x[0]",
// "x[1]", ... for an x of at most kMaxDefaultXGroups entries, else none.
std::vector<SessionConfig::XGroup> ShownXGroups(const SessionConfig& config, int x_dim);

// Each group's mean over its entries of `x` (groups covering x exactly).
std::vector<v1::Hyperparameter> HyperparametersOf(const std::vector<SessionConfig::XGroup>& groups,
                                                  absl::Span<const double> x);

}  // namespace f2obo::server

#endif  // F2OBO_SERVER_HYPERPARAMETERS_H_
