#include "core/state_parts.h"

#include <mutex>
#include <utility>
#include <vector>

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

// The vectors of large parts, recycled.  A round that writes a
// part of a large state (an estimate of d = 100,000 entries is 800 KB)
// gets its copy-on-write copy here, and a part no state holds any more
// comes back here instead of going to the allocator: freed, such blocks
// were handed back to the kernel (glibc trims the heap, or unmaps them)
// and the next round's copies faulted their pages in again, ~30% of an
// IR-SCG step at d = 100,000.  Only vectors of at least kMinEntries (the
// sizes glibc would map on their own) are kept, at most kMaxVectors of
// them and kMaxBytes in all; the rest go to the allocator as before.
// Thread-safe: parts are freed by whichever thread drops the last
// reference.
class VectorPool {
 public:
  static VectorPool& Get() {
    static VectorPool* const pool = new VectorPool();
    return *pool;
  }
  // A vector of n entries (contents unspecified).
  Vector* Take(Eigen::Index n) {
    if (n >= kMinEntries) {
      std::lock_guard<std::mutex> lock(mu_);
      for (size_t k = 0; k < free_.size(); ++k) {
        if (free_[k]->size() != n) continue;
        Vector* v = free_[k];
        free_[k] = free_.back();
        free_.pop_back();
        bytes_ -= Bytes(*v);
        return v;
      }
    }
    return new Vector(n);
  }
  void Give(Vector* v) {
    if (v->size() >= kMinEntries) {
      std::lock_guard<std::mutex> lock(mu_);
      if (free_.size() < kMaxVectors && bytes_ + Bytes(*v) <= kMaxBytes) {
        free_.push_back(v);
        bytes_ += Bytes(*v);
        return;
      }
    }
    delete v;
  }

 private:
  static constexpr Eigen::Index kMinEntries = 16384;  // 128 KiB
  static constexpr size_t kMaxVectors = 32;
  static constexpr size_t kMaxBytes = size_t{32} << 20;
  static size_t Bytes(const Vector& v) { return sizeof(double) * static_cast<size_t>(v.size()); }

  std::mutex mu_;
  std::vector<Vector*> free_;
  size_t bytes_ = 0;
};

// A part's deleter: returns its vector to the pool, and carries the part's
// IsInput mark (in the part's control block, so a part costs no more; it
// is written only by the part's single owner, like the part).
struct PartDeleter {
  bool input = false;
  void operator()(Vector* p) const { VectorPool::Get().Give(p); }
};

// A part owning `v` (allocated with new), returned to the pool when freed.
std::shared_ptr<Vector> NewPart(Vector* v, bool input = false) {
  return std::shared_ptr<Vector>(v, PartDeleter{input});
}

void ClearInput(const std::shared_ptr<Vector>& p) {
  if (PartDeleter* d = std::get_deleter<PartDeleter>(p); d != nullptr) d->input = false;
}

// Unshared (above) for a part: the copy's storage comes from the pool.
Vector& UnsharedPart(std::shared_ptr<Vector>& p) {
  if (p == nullptr) {
    p = NewPart(new Vector());
  } else if (p.use_count() > 1) {
    Vector* copy = VectorPool::Get().Take(p->size());
    *copy = *p;
    p = NewPart(copy);
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

Vector& StateParts::Mutable(size_t i) {
  Part& p = Slot(i);
  Vector& v = UnsharedPart(p);
  ClearInput(p);  // unshared now: this writer is its only owner
  return v;
}

Vector& StateParts::Fresh(size_t i, Eigen::Index n, bool input) {
  Part& p = Slot(i);
  p = NewPart(VectorPool::Get().Take(n), input);
  return *p;
}

bool StateParts::IsInput(size_t i) const {
  const Part* p = i < size_ ? Find(i) : nullptr;
  if (p == nullptr || *p == nullptr) return false;
  const PartDeleter* d = std::get_deleter<PartDeleter>(*p);
  return d != nullptr && d->input;
}

std::shared_ptr<const Vector> StateParts::Share(size_t i) const {
  const Part* p = i < size_ ? Find(i) : nullptr;
  return p != nullptr ? *p : nullptr;
}

void StateParts::Set(size_t i, Vector v) {
  Part& p = Slot(i);
  if (p != nullptr && p.use_count() == 1) {
    *p = std::move(v);
    ClearInput(p);
  } else {
    p = NewPart(new Vector(std::move(v)));
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
