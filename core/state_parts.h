// A session's algorithm-owned vectors (SessionState::aux) as separately
// owned parts, so that copying a state costs what a round changes, not what
// the session holds.
//
// Copy-on-write: a copy shares every part with its source; writing part i
// through the non-const accessor first gives the writer its own copy of that
// part (and of the two small tables leading to it), never of the others.  A
// round works on such a copy: the parts it does not write stay shared with
// the committed state, and ForEachChanged() names those it wrote (by
// identity), which is what the store writes and what the range check reads.
//
// Layout: a two-level radix table of fan-out 64 (4,096 parts a top entry),
// so a copy is one shared-pointer copy per 4,096 parts (a multi-task state
// with 1,000,000 touched tasks of 9 vectors: ~2,200) and a first write into
// a shared region copies 2 x 64 pointers.  An empty part is a null pointer
// (16 bytes): a state may hold many (the multi-task index pages of untouched
// task ranges).
//
// Thread-safety: a StateParts object is not synchronized; distinct copies
// may be used from distinct threads (sharing is through immutable parts and
// atomic reference counts: a part or table is written only by the single
// owner that sees it unshared).
#ifndef F2OBO_CORE_STATE_PARTS_H_
#define F2OBO_CORE_STATE_PARTS_H_

#include <algorithm>
#include <array>
#include <cstddef>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <vector>

#include "core/types.h"

namespace f2obo {

class StateParts {
 public:
  StateParts() = default;
  // Parts with the given contents (moved in); implicit, so that an
  // algorithm's initial vectors can be assigned to SessionState::aux.
  StateParts(std::initializer_list<Vector> parts);
  StateParts(std::vector<Vector> parts);  // NOLINT(runtime/explicit)

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  // Part i (an empty vector when it was never written).
  const Vector& operator[](size_t i) const;
  // Part i, for writing: unshared first (copy-on-write).  The reference
  // stays valid until this part is next unshared (after a copy of the whole
  // StateParts) or the StateParts is cleared or shrunk.
  Vector& operator[](size_t i) { return Mutable(i); }
  Vector& Mutable(size_t i);
  // Replaces part i (no copy of its old contents).
  void Set(size_t i, Vector v);
  // Replaces part i with a vector of n entries whose contents are
  // unspecified (the caller writes every entry), its storage recycled from
  // freed parts of the same size when there are any (VectorPool,
  // state_parts.cc): a row window's new segment each step reuses
  // the pages of a segment it evicted instead of faulting in fresh ones.
  // `input`: the caller writes only input numbers (finite, magnitude <=
  // kMaxInputMagnitude, core/batch.h) it has checked or copied from checked
  // inputs; see IsInput.
  Vector& Fresh(size_t i, Eigen::Index n, bool input);
  // Whether part i was written by Fresh(i, n, true) and not written since
  // (Mutable and Set clear the mark: after them the part holds whatever its
  // writer computed).  Such a part holds only input numbers, so a range
  // check with a bound >= kMaxInputMagnitude cannot fail on it
  // (SessionState::FirstOutOfRange skips it).  Restored and imported parts
  // are never marked.
  bool IsInput(size_t i) const;
  // Part i itself, shared (null when empty): whoever holds it reads it
  // where it is, and it stays as it is (a part is never written while
  // shared: a writer gets its own copy).  For a row window that reads its
  // rows in the state's segment parts (core/simple/row_window.h).
  std::shared_ptr<const Vector> Share(size_t i) const;

  void push_back(Vector v);
  // Appends an empty part (cheap: no allocation for the part itself).
  void push_back_empty() { resize(size_ + 1); }
  void pop_back() { resize(size_ - 1); }
  // Grows with empty parts or drops the last parts.
  void resize(size_t n);
  void clear();

  // Whether part i is the very same object in both (so unchanged since one
  // was copied from the other), or empty in both.
  bool SamePart(const StateParts& o, size_t i) const;
  // Calls f(i) for every part of this that is not SamePart with `base` (every
  // part at or beyond base.size()), in increasing order.  Costs O(size /
  // 4,096 + 64 x the tables that differ), not O(size).
  template <typename F>
  void ForEachChanged(const StateParts& base, F&& f) const;

  class const_iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = Vector;
    using difference_type = std::ptrdiff_t;
    using pointer = const Vector*;
    using reference = const Vector&;
    const_iterator(const StateParts* p, size_t i) : p_(p), i_(i) {}
    const Vector& operator*() const { return (*p_)[i_]; }
    const Vector* operator->() const { return &(*p_)[i_]; }
    const_iterator& operator++() {
      ++i_;
      return *this;
    }
    bool operator==(const const_iterator& o) const { return i_ == o.i_; }
    bool operator!=(const const_iterator& o) const { return i_ != o.i_; }

   private:
    const StateParts* p_;
    size_t i_;
  };
  const_iterator begin() const { return const_iterator(this, 0); }
  const_iterator end() const { return const_iterator(this, size_); }

  // Bytes of the parts' numbers (8 a double), for footprints.
  size_t payload_bytes() const;

 private:
  static constexpr size_t kBits = 6;
  static constexpr size_t kFan = size_t{1} << kBits;  // 64
  static constexpr size_t kPerTop = kFan * kFan;      // 4,096
  using Part = std::shared_ptr<Vector>;
  using Leaf = std::array<Part, kFan>;
  using Mid = std::array<std::shared_ptr<Leaf>, kFan>;

  const Part* Find(size_t i) const;
  Part& Slot(size_t i);  // unshares the tables on the way, not the part

  std::vector<std::shared_ptr<Mid>> top_;
  size_t size_ = 0;
};

template <typename F>
void StateParts::ForEachChanged(const StateParts& base, F&& f) const {
  const size_t common = std::min(size_, base.size_);
  for (size_t t = 0; t * kPerTop < common; ++t) {
    if (top_[t] == base.top_[t]) continue;
    for (size_t m = 0; m < kFan; ++m) {
      const size_t first = t * kPerTop + m * kFan;
      if (first >= common) break;
      const Leaf* a = top_[t] ? (*top_[t])[m].get() : nullptr;
      const Leaf* b = base.top_[t] ? (*base.top_[t])[m].get() : nullptr;
      if (a == b) continue;
      for (size_t l = 0; l < kFan && first + l < common; ++l) {
        if (!SamePart(base, first + l)) f(first + l);
      }
    }
  }
  for (size_t i = common; i < size_; ++i) f(i);
}

}  // namespace f2obo

#endif  // F2OBO_CORE_STATE_PARTS_H_
