#include "core/simple/algorithms/stream_windows.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"

namespace f2obo {
namespace {

constexpr const char* kKind[2] = {"upper", "inner"};
constexpr BatchRole kRole[2] = {BatchRole::kUpper, BatchRole::kInner};
enum HeaderKind { kEmptyKind = 0, kDenseKind = 1, kCsrKind = 2 };
// {kind, has_labels, has_targets, skip} before the slots.
constexpr int kHeaderFixed = 4;
constexpr double kMaxInt = 2147483647.0;

bool IntegerIn(double v, double lo, double hi) { return v >= lo && v <= hi && std::floor(v) == v; }

absl::Status Bad(size_t index, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("aux[", index, "]: ", what));
}

// The widths at aux[first] (version 1: 2 entries; 2: 3), whole numbers.
absl::Status ReadWidths(const Vector& v, int first, int cols[2]) {
  for (int k = 0; k < 2; ++k) {
    if (!IntegerIn(v[k], 0.0, kMaxInt)) {
      return Bad(first, absl::StrCat("the ", kKind[k], " window's width ", v[k],
                                     " is not a whole number"));
    }
    cols[k] = static_cast<int>(v[k]);
  }
  return absl::OkStatus();
}

}  // namespace

void StreamWindows::AppendInitial(StateParts* aux) const {
  aux->push_back((Vector(3) << 0.0, 0.0, kVersion).finished());
  aux->push_back(Vector::Zero(kHeaderFixed));
  aux->push_back(Vector::Zero(kHeaderFixed));
}

absl::Status StreamWindows::Validate(const StateParts& aux, int first) const {
  StreamWindows copy(capacity_);
  return copy.Load(aux, first, nullptr);
}

absl::Status StreamWindows::ValidateRows(const StateParts& aux, int first,
                                         const SimpleFamily& family) const {
  StreamWindows copy(capacity_);
  return copy.Load(aux, first, &family);
}

absl::Status StreamWindows::Load(const StateParts& aux, int first, const SimpleFamily* family) {
  kept_valid_ = false;
  kept_.clear();
  const size_t n = aux.size();
  if (n < static_cast<size_t>(first) + kFixed) {
    return Bad(n, absl::StrCat("missing; the row windows take aux[", first, "] to aux[",
                               first + kFixed - 1, "] and their segments after them"));
  }
  const Vector& widths = aux[first];
  if (widths.size() != 3 || widths[2] != kVersion) {
    return Bad(first, absl::StrCat("has ", widths.size(),
                                   " entries, expected 3 (the windows' widths and the layout "
                                   "version, ",
                                   kVersion, ")"));
  }
  if (absl::Status s = ReadWidths(widths, first, cols_); !s.ok()) return s;
  const size_t slots = n - first - kFixed;
  std::vector<char> used(slots, 0);
  for (int k = 0; k < 2; ++k) {
    const size_t at = first + 1 + k;
    const Vector& h = aux[at];
    if (h.size() < kHeaderFixed) {
      return Bad(at, absl::StrCat("the ", kKind[k], " window's header has ", h.size(),
                                  " entries, expected at least ", kHeaderFixed));
    }
    if (!IntegerIn(h[0], kEmptyKind, kCsrKind) || !IntegerIn(h[1], 0, 1) ||
        !IntegerIn(h[2], 0, 1) || !IntegerIn(h[3], 0, std::max(capacity_, 0))) {
      return Bad(at, absl::StrCat("the ", kKind[k],
                                  " window's header: kind must be 0, 1 or 2, the field flags 0 "
                                  "or 1 and skip a count in [0, ",
                                  std::max(capacity_, 0), "]"));
    }
    const int kind = static_cast<int>(h[0]);
    const bool labels = h[1] == 1.0, targets = h[2] == 1.0;
    const int skip = static_cast<int>(h[3]);
    const int segments = static_cast<int>(h.size()) - kHeaderFixed;
    Window w;
    w.rows = RowWindow(capacity_, cols_[k]);
    if (kind == kEmptyKind) {
      if (segments != 0 || labels || targets || skip != 0) {
        return Bad(at, absl::StrCat("the ", kKind[k],
                                    " window's header: an empty window has kind 0, no fields, "
                                    "no skip and no segments"));
      }
      windows_[k] = std::move(w);
      continue;
    }
    if (segments == 0 || cols_[k] == 0) {
      return Bad(at, absl::StrCat("the ", kKind[k],
                                  " window's header: a window with rows has segments and a "
                                  "width (aux[",
                                  first, "]) > 0"));
    }
    int64_t total = 0;
    for (int j = 0; j < segments; ++j) {
      const double s = h[kHeaderFixed + j];
      if (!IntegerIn(s, 0, static_cast<double>(slots) - 1)) {
        return Bad(at, absl::StrCat("the ", kKind[k], " window's segment slot ", s,
                                    " is not one of the ", slots, " slots"));
      }
      const size_t slot = static_cast<size_t>(s);
      if (used[slot]) return Bad(at, absl::StrCat("segment slot ", slot, " is named twice"));
      used[slot] = 1;
      const size_t index = first + kFixed + slot;
      absl::StatusOr<Batch> b =
          RowWindow::DecodeSegment(aux[index], static_cast<int>(index), capacity_, cols_[k],
                                   kind == kCsrKind, labels, targets);
      if (!b.ok()) return b.status();
      if (family != nullptr) {
        if (absl::Status st = family->ValidateBatch(*b, kRole[k]); !st.ok()) {
          return Bad(index, absl::StrCat(
                                "the ", kKind[k],
                                " window's rows are not ones this family accepts: ", st.message()));
        }
      }
      const int rows = b->rows();
      if (j == 0 && skip >= rows) {
        return Bad(at, absl::StrCat("the ", kKind[k], " window's header: skip ", skip,
                                    " leaves no row of its oldest segment (", rows, " rows)"));
      }
      total += rows;
      if (total - skip > capacity_) {
        return Bad(
            at, absl::StrCat("the ", kKind[k], " window holds more than its ", capacity_, " rows"));
      }
      // A dense window reads its rows in the segment parts themselves.
      if (kind == kCsrKind) {
        w.rows.Append(*b, j == 0 ? skip : 0);
      } else {
        w.rows.AppendSegment(aux.Share(index), j == 0 ? skip : 0, labels, targets);
      }
      w.slots.push_back(static_cast<int>(slot));
      w.segments.push_back(rows);
    }
    w.skip = skip;
    windows_[k] = std::move(w);
  }
  for (size_t s = 0; s < slots; ++s) {
    if (!used[s] && aux[first + kFixed + s].size() != 0) {
      return Bad(first + kFixed + s, "a segment slot no window names must be empty");
    }
  }
  return absl::OkStatus();
}

absl::Status StreamWindows::Upgrade(StateParts* aux, int first) const {
  const StateParts& in = *aux;
  const size_t widths = static_cast<size_t>(first);
  if (in.size() >= widths + kFixed && in[widths].size() == 3 && in[widths][2] == 2.0) {
    // Version 2: every segment padded, the rest as it is.
    for (size_t i = widths + kFixed; i < in.size(); ++i) {
      if (in[i].size() > 0) aux->Set(i, RowWindow::PadUnpaddedSegment(in[i]));
    }
    Vector v = in[widths];
    v[2] = kVersion;
    aux->Set(widths, std::move(v));
    return absl::OkStatus();
  }
  if (in.size() != widths + kVersion1Vectors || in[widths].size() != 2) {
    return absl::OkStatus();  // not version 1
  }
  int cols[2];
  if (absl::Status s = ReadWidths(in[first], first, cols); !s.ok()) return s;
  RowWindow windows[2];
  for (int k = 0; k < 2; ++k) {
    absl::StatusOr<RowWindow> w =
        RowWindow::Decode(in, first + 1 + k * RowWindow::kEncodedVectors, capacity_, cols[k]);
    if (!w.ok()) return w.status();
    windows[k] = *std::move(w);
  }
  aux->resize(first);
  aux->push_back((Vector(3) << cols[0], cols[1], kVersion).finished());
  std::vector<Vector> segments;
  for (int k = 0; k < 2; ++k) {
    const RowWindow& w = windows[k];
    Vector h = Vector::Zero(kHeaderFixed + (w.size() > 0 ? 1 : 0));
    if (w.size() > 0) {
      h[0] = w.sparse() ? kCsrKind : kDenseKind;
      h[1] = w.has_labels() ? 1.0 : 0.0;
      h[2] = w.has_targets() ? 1.0 : 0.0;
      h[kHeaderFixed] = static_cast<double>(segments.size());
      segments.emplace_back();
      w.EncodeNewest(w.size(), &segments.back());
    }
    aux->push_back(std::move(h));
  }
  for (Vector& s : segments) aux->push_back(std::move(s));
  return absl::OkStatus();
}

void StreamWindows::WriteHeader(int k, int first, StateParts* aux) const {
  const Window& w = windows_[k];
  Vector h(kHeaderFixed + static_cast<Eigen::Index>(w.slots.size()));
  const bool any = w.rows.size() > 0;
  h[0] = !any ? kEmptyKind : (w.rows.sparse() ? kCsrKind : kDenseKind);
  h[1] = any && w.rows.has_labels() ? 1.0 : 0.0;
  h[2] = any && w.rows.has_targets() ? 1.0 : 0.0;
  h[3] = w.skip;
  for (size_t j = 0; j < w.slots.size(); ++j) h[kHeaderFixed + j] = w.slots[j];
  aux->Set(first + 1 + k, std::move(h));
}

absl::Status StreamWindows::Append(StateParts* aux, int first, const StepData& data) {
  // The kept windows stand for aux when aux holds the very parts they were
  // written to (the widths and both headers; the segments change only with
  // the headers).
  bool kept = kept_valid_;
  for (int i = 0; i < kFixed && kept; ++i) kept = aux->SamePart(kept_, first + i);
  if (!kept) {
    if (absl::Status s = Load(*aux, first, nullptr); !s.ok()) return s;
  }
  const Batch* step[2] = {&data.upper, &data.inner};
  // Widths first, so that a refused step changes nothing here.
  for (int k = 0; k < 2; ++k) {
    if (step[k]->rows() > 0 && cols_[k] != 0 && step[k]->cols() != cols_[k]) {
      return absl::InvalidArgumentError(
          absl::StrCat("aux[", first, "]: the ", kKind[k], " window holds rows of ", cols_[k],
                       " columns and the step's ", kKind[k], " batch has ", step[k]->cols()));
    }
  }
  kept_valid_ = false;  // the buffers change below
  bool widths_changed = false;
  for (int k = 0; k < 2; ++k) {
    const Batch& b = *step[k];
    if (b.rows() == 0) continue;
    if (cols_[k] == 0) {
      cols_[k] = b.cols();
      windows_[k] = Window();
      windows_[k].rows = RowWindow(capacity_, cols_[k]);
      widths_changed = true;
    }
    Window& w = windows_[k];
    const int before = w.rows.size();
    const int take = std::min(b.rows(), capacity_);
    // The lowest slot neither window uses (or a new one at the end).
    const size_t slots = aux->size() - first - kFixed;
    std::vector<char> used(slots, 0);
    for (const Window& v : windows_) {
      for (int s : v.slots) used[static_cast<size_t>(s)] = 1;
    }
    const size_t slot = static_cast<size_t>(std::find(used.begin(), used.end(), 0) - used.begin());
    if (slot == slots) aux->push_back_empty();
    // The segment holds the step's rows: features the family checked as
    // input numbers (it reads them: SimpleFamily::ValidateBatch, run by
    // Problem::ValidateData before the round), labels (int32) and the
    // counts, offsets and columns (ints below 2^31), all input numbers;
    // targets only some families read and check, so they are checked here
    // (64 numbers a step).  Then the part is marked IsInput and the round's
    // range check does not read the rows a third time; unmarked (a target
    // no family checked), it is checked as before.  Its storage is a
    // recycled one of an evicted segment (StateParts::Fresh).  The rows are
    // written once, into the segment, and a dense window reads them there
    // (RowWindow::AppendAsSegment; the segment's padded header puts them on
    // a cache line, so IR-FSCG's sampled rows and AGM-BiO's repeated passes
    // read them as fast as an aligned copy of their own).
    const bool input = std::all_of(b.targets.data(), b.targets.data() + b.targets.size(),
                                   [](double v) { return InputNumberOk(v); });
    const size_t part = first + kFixed + slot;
    Vector& segment = aux->Fresh(part, static_cast<Eigen::Index>(w.rows.SegmentSize(b)), input);
    w.rows.AppendAsSegment(b, &segment, aux->Share(part));
    w.slots.push_back(static_cast<int>(slot));
    w.segments.push_back(take);
    // The rows the append dropped come off the oldest segments; a segment
    // with no row left is emptied.
    w.skip += before + take - w.rows.size();
    while (w.skip >= w.segments.front()) {
      w.skip -= w.segments.front();
      aux->Set(first + kFixed + w.slots.front(), Vector());
      w.slots.pop_front();
      w.segments.pop_front();
    }
    WriteHeader(k, first, aux);
  }
  if (widths_changed) aux->Set(first, (Vector(3) << cols_[0], cols_[1], kVersion).finished());
  // Read through a const reference: the non-const operator[] unshares.
  const StateParts& out = *aux;
  while (out.size() > static_cast<size_t>(first) + kFixed && out[out.size() - 1].size() == 0) {
    aux->pop_back();
  }
  kept_ = *aux;
  kept_valid_ = true;
  return absl::OkStatus();
}

}  // namespace f2obo
