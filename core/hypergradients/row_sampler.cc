#include "core/hypergradients/row_sampler.h"

#include <algorithm>

namespace f2obo {

void RowSampler::Reserve(const StepData& data) {
  const size_t n_up = data.upper.rows(), n_in = data.inner.rows();
  if (perm_.size() < std::max(n_up, n_in)) perm_.resize(std::max(n_up, n_in));
  if (up_idx_.size() < n_up) up_idx_.resize(n_up);
  if (in_idx_.size() < n_in) in_idx_.resize(n_in);
}

BatchView RowSampler::Draw(const Batch& b, int k, Rng* rng, std::vector<int>* idx) {
  const int n = b.rows();
  if (k >= n) return BatchView::All(b);
  rng->SampleWithoutReplacement(n, k, perm_.data(), idx->data());
  return BatchView{&b, RowSet{idx->data(), k}};
}

}  // namespace f2obo
