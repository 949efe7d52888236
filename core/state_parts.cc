#include "core/state_parts.h"

#include <utility>

namespace f2obo {
namespace {

const Vector& EmptyVector() {
  static const Vector* const empty = new Vector();
  return *empty;
}

// `p` unshared: a copy of what it points to when another owner shares it,
// a new default object when it is null.
template <typename T>
T& Unshared(std::shared_ptr<T>& p) {
  if (p == nullptr) {
    p = std::make_shared<T>();
  } else if (p.use_count() > 1) {
    p = std::make_shared<T>(*p);
  }
  return *p;
}

}  // namespace

StateParts::StateParts(std::initializer_list<Vector> parts) {
  for (const Vector& v : parts) push_back(v);
}

StateParts::StateParts(std::vector<Vector> parts) {
  resize(parts.size());
  for (size_t i = 0; i < parts.size(); ++i) Set(i, std::move(parts[i]));
}

const StateParts::Part* StateParts::Find(size_t i) const {
  const Mid* mid = top_[i / kPerTop].get();
  if (mid == nullptr) return nullptr;
  const Leaf* leaf = (*mid)[(i / kFan) % kFan].get();
  if (leaf == nullptr) return nullptr;
  return &(*leaf)[i % kFan];
}

StateParts::Part& StateParts::Slot(size_t i) {
  Mid& mid = Unshared(top_[i / kPerTop]);
  Leaf& leaf = Unshared(mid[(i / kFan) % kFan]);
  return leaf[i % kFan];
}

const Vector& StateParts::operator[](size_t i) const {
  const Part* p = Find(i);
  return p != nullptr && *p != nullptr ? **p : EmptyVector();
}

Vector& StateParts::Mutable(size_t i) { return Unshared(Slot(i)); }

void StateParts::Set(size_t i, Vector v) {
  Part& p = Slot(i);
  if (p != nullptr && p.use_count() == 1) {
    *p = std::move(v);
  } else {
    p = std::make_shared<Vector>(std::move(v));
  }
}

void StateParts::push_back(Vector v) {
  resize(size_ + 1);
  Set(size_ - 1, std::move(v));
}

void StateParts::resize(size_t n) {
  if (n < size_) {
    // Drop the parts beyond n from the last table they share with parts
    // below n, so that a later growth finds empty slots there.
    for (size_t i = n; i < size_ && i % kPerTop != 0; ++i) {
      if (Find(i) != nullptr && *Find(i) != nullptr) Slot(i).reset();
    }
  }
  size_ = n;
  top_.resize((n + kPerTop - 1) / kPerTop);
}

void StateParts::clear() {
  top_.clear();
  size_ = 0;
}

bool StateParts::SamePart(const StateParts& o, size_t i) const {
  const Part* a = i < size_ ? Find(i) : nullptr;
  const Part* b = i < o.size_ ? o.Find(i) : nullptr;
  const Vector* va = a != nullptr ? a->get() : nullptr;
  const Vector* vb = b != nullptr ? b->get() : nullptr;
  return va == vb;
}

size_t StateParts::payload_bytes() const {
  size_t bytes = 0;
  for (const Vector& v : *this) bytes += sizeof(double) * static_cast<size_t>(v.size());
  return bytes;
}

}  // namespace f2obo
