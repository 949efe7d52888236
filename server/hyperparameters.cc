#include "server/hyperparameters.h"

#include <cstddef>

#include "absl/strings/str_cat.h"

namespace f2obo::server {

std::vector<SessionConfig::XGroup> ShownXGroups(const SessionConfig& config, int x_dim) {
  if (!config.x_groups.empty()) return config.x_groups;
  std::vector<SessionConfig::XGroup> out;
  if (x_dim > kMaxDefaultXGroups) return out;
  for (int i = 0; i < x_dim; ++i) out.push_back({absl::StrCat("x[", i, "]"), 1});
  return out;
}

std::vector<v1::Hyperparameter> HyperparametersOf(const std::vector<SessionConfig::XGroup>& groups,
                                                  absl::Span<const double> x) {
  std::vector<v1::Hyperparameter> out;
  size_t at = 0;
  for (const SessionConfig::XGroup& g : groups) {
    const size_t size = static_cast<size_t>(g.size);
    if (at + size > x.size()) break;  // (checked at create: the groups cover x)
    double sum = 0.0;
    for (size_t i = at; i < at + size; ++i) sum += x[i];
    v1::Hyperparameter h;
    h.set_name(g.name);
    h.set_value(sum / static_cast<double>(size));
    out.push_back(std::move(h));
    at += size;
  }
  return out;
}

}  // namespace f2obo::server
