// The row windows of the windowed algorithms (IR-FSCG, AGM-BiO) in aux:
// the last W rows of each kind, widths learned from the first rows, windows
// a family would not accept refused naming their aux index; a step writes
// its rows' segment and the headers, not the window; the windows kept
// between rounds always match the state a round starts from.
#include "core/simple/algorithms/stream_windows.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "tests/core/simple/algorithms/simple_test_support.h"
#include "tests/core/simple/simple_test_util.h"

namespace f2obo::testing {
namespace {

using ::testing::HasSubstr;

using ::testing::StartsWith;

// Least squares refusing targets above 100 (as a classification family
// refuses labels beyond its classes).
class Picky final : public SimpleFamily {
 public:
  std::string_view name() const override { return "picky"; }
  int x_dim() const override { return 3; }
  absl::Status ValidateBatch(const Batch& b, BatchRole role) const override {
    for (int i = 0; i < b.targets.size(); ++i) {
      if (b.targets[i] > 100.0) return absl::InvalidArgumentError("targets: above 100");
    }
    return inner_.ValidateBatch(b, role);
  }
  double F(const VecIn& x, const BatchView& v, Vector* g) override { return inner_.F(x, v, g); }
  double G(const VecIn& x, const BatchView& v, Vector* g) override { return inner_.G(x, v, g); }
  double SmoothnessF(const BatchView&) override { return 1.0; }
  double SmoothnessG(const BatchView&) override { return 1.0; }

 private:
  RegisteredFamily inner_{"least_squares", 3};
};

// Rows r0, r0 + 1, ...: row i is (i, i, i) with target i.
Batch Numbered(int r0, int n, int cols = 3) {
  return DenseBatch(Vector::LinSpaced(n, r0, r0 + n - 1).replicate(1, cols),
                    Vector::LinSpaced(n, r0, r0 + n - 1));
}

// The rows of a view, oldest first, as a dense matrix with targets in the
// last column.
RowMatrix Gather(const BatchView& v) {
  const Batch& b = *v.batch;
  RowMatrix m(v.rows.n, b.cols() + 1);
  for (int k = 0; k < v.rows.n; ++k) {
    const int i = v.rows.row(k);
    if (b.sparse_features) {
      m.row(k).head(b.cols()) = RowMatrix(b.csr.row(i));
    } else {
      m.row(k).head(b.cols()) = Eigen::Map<const Eigen::RowVectorXd>(b.DenseRow(i), b.cols());
    }
    m(k, b.cols()) = b.targets[i];
  }
  return m;
}

// Whether two gathered windows hold the same rows (sizes first: Eigen's ==
// does not check them).
bool Same(const RowMatrix& a, const RowMatrix& b) {
  return a.rows() == b.rows() && a.cols() == b.cols() && a == b;
}

// The windows a fresh object decodes from aux (an empty step appends nothing).
struct Decoded {
  RowMatrix upper, inner;
};
Decoded DecodeFresh(StateParts aux, int first, int capacity) {
  StreamWindows w(capacity);
  const absl::Status s = w.Append(&aux, first, StepData{});
  EXPECT_TRUE(s.ok()) << s;
  return {Gather(w.upper()), Gather(w.inner())};
}

TEST(StreamWindows, KeepTheLastWRowsOfEachKindOldestFirst) {
  StreamWindows w(5);
  StateParts aux = {Vector::Zero(1)};  // windows from aux[1]
  w.AppendInitial(&aux);
  ASSERT_EQ(static_cast<int>(aux.size()), 1 + StreamWindows::kFixed);
  ASSERT_TRUE(w.Validate(aux, 1).ok()) << w.Validate(aux, 1);
  ASSERT_TRUE(w.Append(&aux, 1, StepData{Numbered(0, 3), Batch{}}).ok());
  ASSERT_TRUE(w.Validate(aux, 1).ok()) << w.Validate(aux, 1);
  EXPECT_EQ(aux[1][0], 3.0);  // the upper width, learned
  EXPECT_EQ(aux[1][1], 0.0);  // no inner rows yet
  StreamWindows again(5);     // decodes aux: it did not write it
  ASSERT_TRUE(again.Append(&aux, 1, StepData{Numbered(3, 4), Numbered(50, 2)}).ok());
  EXPECT_EQ(Vector(Gather(again.upper()).col(3)), Vector::LinSpaced(5, 2, 6));
  EXPECT_EQ(Vector(Gather(again.upper()).col(1)), Vector::LinSpaced(5, 2, 6));
  EXPECT_EQ(Vector(Gather(again.inner()).col(3)), Vector::LinSpaced(2, 50, 51));
  // The upper window: rows 2..6 of segments {0, 1, 2} and {3, 4, 5, 6}: the
  // first segment with 2 rows skipped.
  const Vector& header = aux[2];
  ASSERT_EQ(header.size(), 6);
  EXPECT_EQ(header[3], 2.0);  // skip
  ASSERT_TRUE(w.Validate(aux, 1).ok()) << w.Validate(aux, 1);
}

TEST(StreamWindows, AStepOfAnotherWidthThanTheWindowIsRefused) {
  StreamWindows w(5);
  StateParts aux;
  w.AppendInitial(&aux);
  ASSERT_TRUE(w.Append(&aux, 0, StepData{Batch{}, Numbered(0, 2)}).ok());
  const StateParts before = aux;
  const absl::Status st = w.Append(&aux, 0, StepData{Numbered(7, 1), Numbered(0, 2, 4)});
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(st.message()),
              StartsWith("aux[0]: the inner window holds rows of 3 columns and the step's inner "
                         "batch has 4"));
  for (size_t i = 0; i < aux.size(); ++i) EXPECT_TRUE(aux.SamePart(before, i)) << i;
}

// A step writes the segments of its rows, the headers and the segments it
// empties: O(rows appended x cols), whatever the window holds.
TEST(StreamWindows, AStepWritesItsRowsNotTheWindow) {
  constexpr int kW = 400;
  StreamWindows w(kW);
  StateParts aux;
  w.AppendInitial(&aux);
  for (int t = 0; t < 200; ++t) {
    const StateParts before = aux;
    ASSERT_TRUE(w.Append(&aux, 0, StepData{Numbered(10 * t, 7), Numbered(10 * t, 3)}).ok());
    int64_t written = 0;
    aux.ForEachChanged(before, [&](size_t i) { written += aux[i].size(); });
    // 10 rows of 3 columns and a target, a segment header each (its counts
    // and padding), the headers (4 words and one a segment: at most
    // 400 / 3 + 1 segments).
    EXPECT_LE(written, 10 * 4 + 2 * RowWindow::kSegmentHeader + 2 * (4 + kW / 3 + 1))
        << "step " << t;
    const Decoded fresh = DecodeFresh(aux, 0, kW);
    EXPECT_TRUE(Same(Gather(w.upper()), fresh.upper)) << "step " << t;
    EXPECT_TRUE(Same(Gather(w.inner()), fresh.inner)) << "step " << t;
  }
  EXPECT_EQ(Gather(w.upper()).rows(), kW);
  // The last 400 upper rows: steps 143 to 199 (57 x 7) and the newest row
  // of step 142 (10 x 142 + 6).
  EXPECT_EQ(Gather(w.upper())(0, 3), 1426.0);
  // The slots stay few: a window's segments, plus none left over.
  EXPECT_LE(aux.size(), static_cast<size_t>(StreamWindows::kFixed + kW / 7 + kW / 3 + 8));
}

// The windows kept between rounds follow the state a round starts from,
// not the last one it wrote: rounds thrown away (their state discarded)
// and states from elsewhere leave no trace.  Dense and CSR steps mixed.
TEST(StreamWindows, KeptWindowsFollowTheStateARoundStartsFrom) {
  std::mt19937_64 rng(3);
  std::uniform_int_distribution<int> size(0, 6);
  for (const int capacity : {1, 5, 16}) {
    StreamWindows kept(capacity);
    StateParts committed;
    kept.AppendInitial(&committed);
    for (int t = 0; t < 120; ++t) {
      StepData data{DenseRegression(size(rng), 3, rng), DenseRegression(size(rng), 3, rng)};
      if (t % 3 == 0) data.inner = AsCsr(data.inner);
      if (t % 4 == 1) {
        StateParts scratch = committed;  // a round prepared, then thrown away
        ASSERT_TRUE(kept.Append(&scratch, 0,
                                StepData{DenseRegression(2, 3, rng), DenseRegression(1, 3, rng)})
                        .ok());
      }
      StateParts next = committed;
      ASSERT_TRUE(kept.Append(&next, 0, data).ok());
      StateParts reference = committed;
      StreamWindows fresh(capacity);
      ASSERT_TRUE(fresh.Append(&reference, 0, data).ok());
      ASSERT_TRUE(Same(Gather(kept.upper()), Gather(fresh.upper()))) << capacity << " step " << t;
      ASSERT_TRUE(Same(Gather(kept.inner()), Gather(fresh.inner()))) << capacity << " step " << t;
      ASSERT_TRUE(kept.Validate(next, 0).ok()) << kept.Validate(next, 0);
      const Decoded decoded = DecodeFresh(next, 0, capacity);
      ASSERT_TRUE(Same(Gather(kept.upper()), decoded.upper)) << capacity << " step " << t;
      ASSERT_TRUE(Same(Gather(kept.inner()), decoded.inner)) << capacity << " step " << t;
      committed = next;
    }
  }
}

// Rows a state brings from outside are checked by the family before use:
// once, when the state is restored (ValidateRows, which SimpleProblem's
// ValidateRestored calls), not at every step.
TEST(StreamWindows, RowsTheFamilyRefusesAreRefusedNamingTheirSegment) {
  Picky family;
  StreamWindows w(5);
  StateParts aux;
  w.AppendInitial(&aux);
  EXPECT_TRUE(w.ValidateRows(aux, 0, family).ok()) << "empty windows";
  ASSERT_TRUE(w.Append(&aux, 0, StepData{Numbered(97, 2), Batch{}}).ok());
  EXPECT_TRUE(w.ValidateRows(aux, 0, family).ok()) << "targets 97, 98";
  ASSERT_TRUE(w.Append(&aux, 0, StepData{Numbered(99, 3), Batch{}}).ok());
  // holds the target 101 in its second segment (slot 1, aux[4]), which the
  // family would refuse
  const absl::Status st = w.ValidateRows(aux, 0, family);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(st.message()),
              StartsWith("aux[4]: the upper window's rows are not ones this family accepts: "
                         "targets: above 100"));
}

TEST(StreamWindows, MalformedLayoutsAreRefusedNamingTheVector) {
  StreamWindows w(5);
  StateParts good;
  w.AppendInitial(&good);
  ASSERT_TRUE(w.Append(&good, 0, StepData{Numbered(0, 3), Numbered(0, 4)}).ok());
  ASSERT_TRUE(w.Append(&good, 0, StepData{Numbered(3, 3), Batch{}}).ok());
  ASSERT_TRUE(w.Validate(good, 0).ok()) << w.Validate(good, 0);
  // Slots: 0 upper {0,1,2} (skip 1), 1 inner, 2 upper {3,4,5}.
  const auto error = [&](const std::function<void(StateParts*)>& edit) {
    StateParts aux = good;
    edit(&aux);
    const absl::Status s = StreamWindows(5).Validate(aux, 0);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    return std::string(s.message());
  };
  EXPECT_THAT(error([](StateParts* a) { (*a)[0][1] = 2.5; }),
              HasSubstr("aux[0]: the inner window's width 2.5 is not a whole number"));
  EXPECT_THAT(error([](StateParts* a) { (*a)[0].conservativeResize(4); }),
              HasSubstr("aux[0]: has 4 entries, expected 3"));
  EXPECT_THAT(error([](StateParts* a) { a->resize(2); }), HasSubstr("aux[2]: missing"));
  EXPECT_THAT(error([](StateParts* a) { (*a)[1][3] = 3; }),
              HasSubstr("aux[1]: the upper window's header: skip 3 leaves no row"));
  EXPECT_THAT(error([](StateParts* a) { (*a)[2][4] = 0; }),
              HasSubstr("aux[2]: segment slot 0 is named twice"));
  EXPECT_THAT(error([](StateParts* a) { (*a)[2][4] = 9; }),
              HasSubstr("aux[2]: the inner window's segment slot 9 is not one of the 3 slots"));
  EXPECT_THAT(error([](StateParts* a) { a->push_back(Vector::Ones(3)); }),
              HasSubstr("aux[6]: a segment slot no window names must be empty"));
  EXPECT_THAT(error([](StateParts* a) { (*a)[1][3] = 0; }),
              HasSubstr("aux[1]: the upper window holds more than its 5 rows"));
  EXPECT_THAT(error([](StateParts* a) { (*a)[5][0] = 4; }),
              HasSubstr("aux[5]: row segment has 20 entries, expected 24"));
  EXPECT_THAT(error([](StateParts* a) { (*a)[5][RowWindow::kSegmentHeader + 1] = std::nan(""); }),
              HasSubstr("aux[5][1]: not finite"));
  EXPECT_THAT(error([](StateParts* a) { (*a)[5][3] = 1; }),
              HasSubstr("aux[5]: row segment header entry 3 must be 0"));
  EXPECT_THAT(error([](StateParts* a) { (*a)[5].conservativeResize(7); }),
              HasSubstr("aux[5]: row segment has fewer than 8 entries"));
}

// States written before segments (layout version 1: each window in one
// part of 5 vectors) are rewritten into segments, rows unchanged.
TEST(StreamWindows, Version1WindowsAreUpgradedRowsUnchanged) {
  std::mt19937_64 rng(9);
  for (bool csr : {false, true}) {
    RowWindow upper(6, 3), inner(6, 3);
    for (int t = 0; t < 4; ++t) {
      const Batch b = DenseRegression(3, 3, rng);
      upper.Append(csr ? AsCsr(b) : b);
    }
    std::vector<Vector> old = {Vector::Ones(2), (Vector(2) << 3, 0).finished()};
    upper.Encode(&old);
    RowWindow(6, 0).Encode(&old);
    StateParts aux(old);
    const StreamWindows w(6);
    ASSERT_TRUE(w.Upgrade(&aux, 1).ok());
    ASSERT_TRUE(w.Validate(aux, 1).ok()) << w.Validate(aux, 1);
    EXPECT_EQ(aux.size(), 1u + StreamWindows::kFixed + 1);
    EXPECT_EQ(aux[0], Vector::Ones(2)) << "the vectors before the windows are kept";
    const Decoded d = DecodeFresh(aux, 1, 6);
    EXPECT_TRUE(Same(d.upper, Gather(upper.view())));
    EXPECT_EQ(d.inner.rows(), 0);
    // Upgrading again changes nothing.
    const StateParts once = aux;
    ASSERT_TRUE(w.Upgrade(&aux, 1).ok());
    for (size_t i = 0; i < aux.size(); ++i) EXPECT_TRUE(aux.SamePart(once, i));
  }
}

// States written before the segments' padding (layout version 2: each
// segment {k, nnz, body}, its rows 16 bytes past a cache line) get their
// segments padded, rows and everything else unchanged.
TEST(StreamWindows, Version2WindowsAreUpgradedRowsUnchanged) {
  std::mt19937_64 rng(4);
  StreamWindows w(6);
  StateParts now = {Vector::Ones(2)};
  w.AppendInitial(&now);
  for (int t = 0; t < 5; ++t) {
    const Batch inner = DenseRegression(2, 3, rng);
    ASSERT_TRUE(w.Append(&now, 1, StepData{DenseRegression(3, 3, rng), AsCsr(inner)}).ok());
  }
  // The same state as a version-2 server wrote it.
  StateParts old = now;
  ASSERT_TRUE(ToWindowLayoutVersion2(&old, 1));
  int segments = 0;
  for (size_t i = 1 + StreamWindows::kFixed; i < old.size(); ++i) {
    if (old[i].size() == 0) continue;
    ++segments;
    EXPECT_EQ(old[i].size(), now[i].size() - RowWindow::kSegmentHeader + 2);
  }
  ASSERT_GE(segments, 4) << "dense and CSR segments, several of each";
  EXPECT_FALSE(w.Validate(old, 1).ok()) << "version 2 is read only to upgrade it";
  ASSERT_TRUE(w.Upgrade(&old, 1).ok());
  ASSERT_TRUE(w.Validate(old, 1).ok()) << w.Validate(old, 1);
  ASSERT_EQ(old.size(), now.size());
  for (size_t i = 0; i < now.size(); ++i) EXPECT_EQ(old[i], now[i]) << "aux[" << i << "]";
  const Decoded a = DecodeFresh(old, 1, 6), b = DecodeFresh(now, 1, 6);
  EXPECT_TRUE(Same(a.upper, b.upper));
  EXPECT_TRUE(Same(a.inner, b.inner));
  // Upgrading again changes nothing.
  const StateParts once = old;
  ASSERT_TRUE(w.Upgrade(&old, 1).ok());
  for (size_t i = 0; i < old.size(); ++i) EXPECT_TRUE(old.SamePart(once, i)) << i;
}

}  // namespace
}  // namespace f2obo::testing
