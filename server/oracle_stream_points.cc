// The points an OracleSteps client holds (server/oracle_stream.h): which
// id names a point, by values or by recipe (server/oracle_recipes.h), and
// which ones are forgotten.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <iterator>
#include <optional>

#include "absl/hash/hash.h"
#include "absl/strings/string_view.h"
#include "server/oracle_recipes.h"
#include "server/oracle_stream.h"

namespace f2obo::server {

size_t VectorHash(const Vector& v) {
  return absl::HashOf(absl::string_view(reinterpret_cast<const char*>(v.data()),
                                        static_cast<size_t>(v.size()) * sizeof(double)));
}

namespace {

size_t SpanHash(absl::Span<const double> v) {
  return absl::HashOf(
      absl::string_view(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(double)));
}

std::array<double, 4> Probe(absl::Span<const double> v) {
  const size_t n = v.size();
  return {v[0], v[n / 3], v[2 * n / 3], v[n - 1]};
}

}  // namespace

bool OraclePoints::Named::Matches(absl::Span<const double> values) const {
  if (values.size() != size || size == 0) return false;
  const std::array<double, 4> p = Probe(values);
  return std::memcmp(p.data(), probe.data(), sizeof(probe)) == 0 && SpanHash(values) == hash;
}

uint64_t OraclePoints::Held(absl::Span<const double> values) const {
  for (const auto& [id, v] : held) {
    if (v.size() == values.size() &&
        std::memcmp(v.data(), values.data(), values.size() * sizeof(double)) == 0) {
      return id;
    }
  }
  for (const Named& n : named) {
    if (n.Matches(values)) return n.id;
  }
  return 0;
}

void OraclePoints::NameDone(absl::Span<const double> values, bool recipes, v1::OraclePoint* out) {
  if (const uint64_t id = Held(values); id != 0) {
    out->set_id(id);
    done_ids.push_back(id);
    return;
  }
  out->set_values(values.data(), values.size() * sizeof(double));
  if (!recipes) return;  // nothing to keep
  // The client keeps the server's y under this id: the next step's first
  // request names it.
  const uint64_t id = next_id++;
  out->set_id(id);
  if (values.empty()) return;
  named.push_back({id, values.size(), Probe(values), SpanHash(values)});
  done_ids.push_back(id);
}

void OraclePoints::EndStep() {
  const auto named_by_done = [&](uint64_t id) {
    return std::find(done_ids.begin(), done_ids.end(), id) != done_ids.end();
  };
  std::vector<Named> kept_named;
  for (const Named& n : named) {
    if (named_by_done(n.id)) {
      kept_named.push_back(n);
    } else {
      forget.push_back(n.id);
    }
  }
  std::deque<std::pair<uint64_t, std::vector<double>>> small;
  for (auto& [id, v] : held) {
    if (v.size() <= kSmallPoint) {
      small.emplace_back(id, std::move(v));
    } else if (named_by_done(id)) {
      kept_named.push_back({id, v.size(), Probe(v), SpanHash(v)});
    } else {
      forget.push_back(id);
    }
  }
  held = std::move(small);
  held_bytes = 0;
  for (const auto& h : held) held_bytes += h.second.size() * sizeof(double);
  named = std::move(kept_named);
  done_ids.clear();
  std::vector<double>().swap(spare);
}

void StreamOracle::Detach() {
  stream_ = nullptr;
  for (OraclePoints::Kept& k : points_->kept) k.values = nullptr;
}

bool StreamOracle::InRequest(uint64_t id) const {
  return std::find(in_request_.begin(), in_request_.end(), id) != in_request_.end();
}

uint64_t StreamOracle::PointId(absl::Span<const double> values, v1::OracleRequest* request) {
  const size_t bytes = values.size() * sizeof(double);
  auto& held = points_->held;
  for (auto it = held.begin(); it != held.end(); ++it) {
    // Different points differ in their first entries: memcmp stops there.
    if (it->second.size() == values.size() &&
        std::memcmp(it->second.data(), values.data(), bytes) == 0) {
      const uint64_t id = it->first;
      // Most recently used last.
      if (std::next(it) != held.end()) {
        std::pair<uint64_t, std::vector<double>> moved = std::move(*it);
        held.erase(it);
        held.push_back(std::move(moved));
      }
      if (!InRequest(id)) in_request_.push_back(id);
      return id;
    }
  }
  for (auto it = points_->named.begin(); it != points_->named.end(); ++it) {
    if (it->Matches(values)) {
      // Held again with its values for the step (a base of its recipes:
      // y_{k+1} = y_k - beta d), dropped again at its end (EndStep).
      const uint64_t id = it->id;
      points_->named.erase(it);
      held.emplace_back(id, std::vector<double>(values.begin(), values.end()));
      points_->held_bytes += bytes;
      if (!InRequest(id)) in_request_.push_back(id);
      return id;
    }
  }
  if (shape_.recipes && values.size() == static_cast<size_t>(shape_.y_dim)) {
    if (const uint64_t id = RecipeId(values, request); id != 0) return id;
  }
  const uint64_t id = points_->next_id++;
  v1::OraclePoint* p = request->add_points();
  p->set_id(id);
  p->set_values(values.data(), bytes);
  // The spare y-sized storage only for a point that is not small: a small
  // one is kept across steps, and would carry the spare's capacity along.
  std::vector<double> copy;
  if (values.size() > OraclePoints::kSmallPoint) copy = std::move(points_->spare);
  copy.assign(values.begin(), values.end());
  held.emplace_back(id, std::move(copy));
  points_->held_bytes += bytes;
  in_request_.push_back(id);
  return id;
}

uint64_t StreamOracle::RecipeId(absl::Span<const double> values, v1::OracleRequest* request) {
  auto& held = points_->held;
  const double v_max = MaxAbs(values);
  const double tol = kRecipeTolerance * std::max(v_max, 1e-300);
  // A point the client holds a few ulps away (the server's z after a
  // round whose z the client built by recipe): the client's is used.
  for (auto it = held.rbegin(); it != held.rend(); ++it) {
    const std::vector<double>& h = it->second;
    if (h.size() != values.size()) continue;
    size_t i = 0;
    while (i < h.size() && std::abs(h[i] - values[i]) <= tol) ++i;
    if (i == h.size()) {
      if (!InRequest(it->first)) in_request_.push_back(it->first);
      return it->first;
    }
  }
  // base + c * answer: z_k - alpha grad_y g(z_k), y_k - beta (fused
  // gradient at y_k), Algorithm 1 lines 5-6.  The result goes into the
  // storage of a point evicted earlier (no fresh pages to fault in).
  std::vector<double> point = std::move(points_->spare);
  for (auto it = held.rbegin(); it != held.rend(); ++it) {
    if (it->second.size() != values.size()) continue;
    for (size_t t = 0; t < terms_.size(); ++t) {
      const std::optional<double> c =
          FindRecipe(it->second, term_entries_[t], values, v_max, &point);
      if (!c.has_value()) continue;
      const uint64_t id = points_->next_id++;
      v1::OraclePointRecipe* r = request->add_recipes();
      r->set_id(id);
      r->set_base(it->first);
      v1::OracleRecipeTerm* term = r->add_terms();
      term->set_coef(*c);
      term->set_point(terms_[t].id);
      points_->held_bytes += point.size() * sizeof(double);
      held.emplace_back(id, std::move(point));
      in_request_.push_back(id);
      return id;
    }
  }
  points_->spare = std::move(point);
  return 0;
}

void StreamOracle::Evict(v1::OracleRequest* request) {
  auto& held = points_->held;
  // Two points of y's size besides the small ones: the round's y and z
  // (an F2OBO request asks at y_k and z_k; the hypergradient and `done`
  // name the last of them), never one this request names.
  const size_t budget =
      2 * sizeof(double) * static_cast<size_t>(std::max(shape_.x_dim, shape_.y_dim)) +
      (size_t{1} << 20);
  while (!held.empty() && (held.size() > OraclePoints::kCapacity || points_->held_bytes > budget) &&
         !InRequest(held.front().first)) {
    request->add_forget(held.front().first);
    points_->held_bytes -= held.front().second.size() * sizeof(double);
    if (held.front().second.size() > OraclePoints::kSmallPoint && points_->spare.empty()) {
      points_->spare = std::move(held.front().second);  // the next new point's storage
    }
    held.pop_front();
  }
}

}  // namespace f2obo::server
