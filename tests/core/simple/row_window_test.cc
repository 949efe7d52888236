// RowWindow: the last `capacity` rows, oldest first, against a reference
// list; dense, CSR and mixed storage; Encode/Decode bit-exact and refusing
// malformed encodings.
#include "core/simple/row_window.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <deque>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/constraint.h"
#include "core/features.h"
#include "tests/core/simple/simple_test_util.h"

namespace f2obo::testing {
namespace {

using ::testing::HasSubstr;

struct RefRow {
  Vector x;
  int32_t label;
  double target;
};

// A batch of k rows whose entries are random with about half of them 0,
// labels and targets set.
Batch RandomRows(int k, int cols, bool csr, std::mt19937_64& rng) {
  std::normal_distribution<double> n(0.0, 1.0);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  Batch b;
  b.dense = RowMatrix(k, cols);
  for (int i = 0; i < k; ++i) {
    for (int j = 0; j < cols; ++j) b.dense(i, j) = u(rng) < 0.5 ? 0.0 : n(rng);
    b.labels.push_back(static_cast<int32_t>(u(rng) * 4));
  }
  b.targets = RandomVector(k, rng);
  return csr ? AsCsr(b) : b;
}

RowMatrix DenseOf(const Batch& b) { return b.sparse_features ? RowMatrix(b.csr) : b.dense; }

void ExpectMatches(const RowWindow& w, const std::deque<RefRow>& ref, const std::string& where) {
  const Batch& b = w.CopyRows();
  ASSERT_EQ(w.size(), static_cast<int>(ref.size())) << where;
  if (ref.empty()) return;
  const RowMatrix m = DenseOf(b);
  ASSERT_EQ(b.labels.size(), ref.size()) << where;
  ASSERT_EQ(b.targets.size(), static_cast<Eigen::Index>(ref.size())) << where;
  for (size_t r = 0; r < ref.size(); ++r) {
    EXPECT_EQ(Vector(m.row(static_cast<Eigen::Index>(r)).transpose()), ref[r].x)
        << where << " row " << r;
    EXPECT_EQ(b.labels[r], ref[r].label) << where;
    EXPECT_EQ(b.targets[static_cast<Eigen::Index>(r)], ref[r].target) << where;
  }
}

void AppendRef(const Batch& b, int capacity, std::deque<RefRow>* ref) {
  const RowMatrix m = DenseOf(b);
  for (int i = 0; i < b.rows(); ++i) {
    ref->push_back({m.row(i).transpose(), b.labels[i], b.targets[i]});
    if (static_cast<int>(ref->size()) > capacity) ref->pop_front();
  }
}

TEST(RowWindow, KeepsTheLastCapacityRowsOldestFirst) {
  RowWindow w(5, 2);
  Batch a;
  a.dense = (RowMatrix(3, 2) << 0, 0, 1, 1, 2, 2).finished();
  a.targets = (Vector(3) << 0, 1, 2).finished();
  w.Append(a);
  EXPECT_EQ(w.size(), 3);
  Batch b;
  b.dense = (RowMatrix(4, 2) << 3, 3, 4, 4, 5, 5, 6, 6).finished();
  b.targets = (Vector(4) << 3, 4, 5, 6).finished();
  w.Append(b);
  EXPECT_EQ(w.size(), 5);
  EXPECT_EQ(w.CopyRows().dense.col(0), (Vector(5) << 2, 3, 4, 5, 6).finished());
  EXPECT_EQ(w.CopyRows().targets, (Vector(5) << 2, 3, 4, 5, 6).finished());
  EXPECT_TRUE(w.CopyRows().labels.empty());  // the first batch had none
  // A batch larger than the window keeps its own last rows.
  Batch c;
  c.dense = RowMatrix(7, 2);
  for (int i = 0; i < 7; ++i) c.dense.row(i).setConstant(10 + i);
  c.targets = Vector::LinSpaced(7, 10, 16);
  w.Append(c);
  EXPECT_EQ(w.CopyRows().dense.col(1), (Vector(5) << 12, 13, 14, 15, 16).finished());
  // Empty batches and rows of another width change nothing.
  w.Append(Batch{});
  Batch wide;
  wide.dense = RowMatrix::Ones(1, 3);
  wide.targets = Vector::Ones(1);
  w.Append(wide);
  EXPECT_EQ(w.CopyRows().dense.col(1), (Vector(5) << 12, 13, 14, 15, 16).finished());
}

TEST(RowWindow, MixedBatchSizesAndStoragesMatchAReferenceList) {
  std::mt19937_64 rng(41);
  std::uniform_int_distribution<int> size(0, 9);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (bool window_csr : {false, true}) {
    for (int capacity : {1, 6, 20}) {
      RowWindow w(capacity, 4);
      std::deque<RefRow> ref;
      // The first batch fixes the storage; later ones come in either.
      Batch first = RandomRows(2, 4, window_csr, rng);
      w.Append(first);
      AppendRef(first, capacity, &ref);
      for (int step = 0; step < 60; ++step) {
        const Batch b = RandomRows(size(rng), 4, u(rng) < 0.5, rng);
        w.Append(b);
        AppendRef(b, capacity, &ref);
        ASSERT_EQ(w.CopyRows().sparse_features, window_csr);
        ExpectMatches(w, ref,
                      "capacity " + std::to_string(capacity) + " step " + std::to_string(step));
        if (window_csr) {
          // Compressed, with no explicit zeros from dense batches.
          EXPECT_TRUE(w.CopyRows().csr.isCompressed());
          for (int p = 0; p < w.CopyRows().csr.nonZeros(); ++p) {
            EXPECT_NE(w.CopyRows().csr.valuePtr()[p], 0.0);
          }
        }
      }
    }
  }
}

TEST(RowWindow, ZeroCapacityKeepsNothing) {
  std::mt19937_64 rng(42);
  RowWindow w(0, 3);
  w.Append(RandomRows(4, 3, false, rng));
  EXPECT_EQ(w.size(), 0);
  EXPECT_EQ(w.capacity(), 0);
}

// Bit-exact equality of two windows' rows.
void ExpectIdentical(const RowWindow& wa, const RowWindow& wb) {
  ASSERT_EQ(wa.size(), wb.size());
  const Batch ra = wa.CopyRows(), rb = wb.CopyRows();
  ASSERT_EQ(ra.sparse_features, rb.sparse_features);
  if (wa.size() == 0) return;
  if (ra.sparse_features) {
    const CsrMatrix &x = ra.csr, &y = rb.csr;
    ASSERT_EQ(x.nonZeros(), y.nonZeros());
    EXPECT_EQ(0, std::memcmp(x.valuePtr(), y.valuePtr(), sizeof(double) * x.nonZeros()));
    EXPECT_EQ(0, std::memcmp(x.innerIndexPtr(), y.innerIndexPtr(), sizeof(int) * x.nonZeros()));
    EXPECT_EQ(0, std::memcmp(x.outerIndexPtr(), y.outerIndexPtr(), sizeof(int) * (x.rows() + 1)));
  } else {
    ASSERT_EQ(ra.dense.size(), rb.dense.size());
    EXPECT_EQ(0, std::memcmp(ra.dense.data(), rb.dense.data(), sizeof(double) * ra.dense.size()));
  }
  EXPECT_EQ(ra.labels, rb.labels);
  ASSERT_EQ(ra.targets.size(), rb.targets.size());
  EXPECT_EQ(0,
            std::memcmp(ra.targets.data(), rb.targets.data(), sizeof(double) * ra.targets.size()));
}

TEST(RowWindow, EncodeDecodeRoundTripIsBitExactAndResumesIdentically) {
  std::mt19937_64 rng(43);
  for (bool csr : {false, true}) {
    for (int fill : {0, 3, 15}) {
      RowWindow w(8, 5);
      while (w.size() < std::min(fill, 8) && fill > 0) w.Append(RandomRows(3, 5, csr, rng));
      std::vector<Vector> aux = {Vector::Ones(2)};  // something before the window
      w.Encode(&aux);
      ASSERT_EQ(aux.size(), 1u + RowWindow::kEncodedVectors);
      absl::StatusOr<RowWindow> back = RowWindow::Decode(aux, 1, 8, 5);
      ASSERT_TRUE(back.ok()) << back.status();
      ExpectIdentical(w, *back);
      EXPECT_EQ(back->capacity(), 8);
      // The same appends after the round trip give the same windows.
      for (int step = 0; step < 5; ++step) {
        const Batch b = RandomRows(2 + step, 5, step % 2 == 0, rng);
        w.Append(b);
        back->Append(b);
        ExpectIdentical(w, *back);
      }
    }
  }
  // Tiny and huge magnitudes survive (no text round trip).
  RowWindow w(3, 1);
  Batch b;
  b.dense = (RowMatrix(2, 1) << 4.9e-324, -1e150).finished();
  b.targets = (Vector(2) << 0.1, -0.0).finished();
  w.Append(b);
  std::vector<Vector> aux;
  w.Encode(&aux);
  const RowWindow back = *RowWindow::Decode(aux, 0, 3, 1);
  ExpectIdentical(w, back);
  EXPECT_TRUE(std::signbit(back.CopyRows().targets[1]));
}

// An encoding of a small window (dense or CSR) to corrupt.
std::vector<Vector> Encoded(bool csr) {
  RowWindow w(4, 3);
  Batch b;
  b.dense = (RowMatrix(2, 3) << 1, 0, 2, 0, 3, 0).finished();
  b.labels = {1, 2};
  b.targets = (Vector(2) << 0.5, -0.5).finished();
  w.Append(csr ? AsCsr(b) : b);
  std::vector<Vector> aux;
  w.Encode(&aux);
  return aux;
}

std::string DecodeError(const std::vector<Vector>& aux, int capacity = 4, int cols = 3) {
  absl::StatusOr<RowWindow> w = RowWindow::Decode(aux, 0, capacity, cols);
  EXPECT_FALSE(w.ok());
  if (!w.ok()) {
    EXPECT_EQ(w.status().code(), absl::StatusCode::kInvalidArgument);
  }
  return w.ok() ? "" : std::string(w.status().message());
}

TEST(RowWindow, DecodeRefusesBadShapesAndValues) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  ASSERT_TRUE(RowWindow::Decode(Encoded(false), 0, 4, 3).ok());
  ASSERT_TRUE(RowWindow::Decode(Encoded(true), 0, 4, 3).ok());
  {
    std::vector<Vector> aux = Encoded(false);
    aux.pop_back();
    EXPECT_THAT(DecodeError(aux), HasSubstr("needs 5 vectors from aux[0], there are 4"));
  }
  auto corrupt = [](bool csr, int vec, auto edit) {
    std::vector<Vector> aux = Encoded(csr);
    edit(aux[static_cast<size_t>(vec)]);
    return aux;
  };
  EXPECT_THAT(DecodeError(corrupt(false, 0, [](Vector& v) { v.conservativeResize(5); })),
              HasSubstr("aux[0]: row window header has 5 entries"));
  EXPECT_THAT(DecodeError(corrupt(false, 0, [](Vector& v) { v[0] = 3; })),
              HasSubstr("aux[0]: row window header: kind"));
  EXPECT_THAT(DecodeError(corrupt(false, 0, [&](Vector& v) { v[1] = nan; })),
              HasSubstr("aux[0]: row window header: kind"));
  EXPECT_THAT(DecodeError(Encoded(false), /*capacity=*/1),
              HasSubstr("aux[0]: row window header: 2 rows, expected a count in [0, 1]"));
  EXPECT_THAT(DecodeError(Encoded(false), 4, /*cols=*/4),
              HasSubstr("aux[0]: row window header: 3 columns, expected 4"));
  EXPECT_THAT(DecodeError(corrupt(false, 1, [](Vector& v) { v.conservativeResize(5); })),
              HasSubstr("aux[1]: row window has 5 values, expected rows * cols = 6"));
  EXPECT_THAT(DecodeError(corrupt(false, 1, [&](Vector& v) { v[4] = nan; })),
              HasSubstr("aux[1][4]: not finite (row 1, column 1)"));
  EXPECT_THAT(DecodeError(corrupt(false, 2, [](Vector& v) { v = Vector::Zero(3); })),
              HasSubstr("aux[2]: row window must be empty for a dense window"));
  EXPECT_THAT(DecodeError(corrupt(false, 4, [](Vector& v) { v[0] = -1; })),
              HasSubstr("aux[4]: row window label 0 = -1 is not a non-negative integer"));
  EXPECT_THAT(DecodeError(corrupt(false, 4, [](Vector& v) { v[1] = 1.5; })),
              HasSubstr("aux[4]: row window label 1 = 1.5"));
  EXPECT_THAT(DecodeError(corrupt(false, 4, [](Vector& v) { v[3] = 1e300; })),
              HasSubstr("aux[4] targets[1]: 1e+300 is beyond the input bound"));
  EXPECT_THAT(DecodeError(corrupt(false, 4, [](Vector& v) { v.conservativeResize(3); })),
              HasSubstr("aux[4]: row window has 3 entries, expected 4"));
  // CSR: offsets, columns, values.
  EXPECT_THAT(DecodeError(corrupt(true, 2, [](Vector& v) { v[2] = 2; })),
              HasSubstr("aux[2]: row window csr.indptr: must start at 0 and end at nnz = 3"));
  EXPECT_THAT(DecodeError(corrupt(true, 2, [](Vector& v) { v[1] = 4; })),
              HasSubstr("aux[2]: row window row offset 1 = 4 is not an integer in [0, nnz]"));
  EXPECT_THAT(DecodeError(corrupt(true, 2, [](Vector& v) { v[1] = 0.5; })),
              HasSubstr("aux[2]: row window row offset 1 = 0.5 is not an integer in [0, nnz]"));
  EXPECT_THAT(DecodeError(corrupt(true, 2, [](Vector& v) { v.conservativeResize(2); })),
              HasSubstr("aux[2]: row window has 2 row offsets, expected rows + 1 = 3"));
  EXPECT_THAT(DecodeError(corrupt(true, 3, [](Vector& v) { v[0] = 3; })),
              HasSubstr("aux[3]: row window column index 0 = 3 is not an integer in [0, cols)"));
  EXPECT_THAT(DecodeError(corrupt(true, 3, [](Vector& v) { std::swap(v[0], v[1]); })),
              HasSubstr("aux[3]: row window csr.indices: row 0 columns not strictly increasing"));
  EXPECT_THAT(DecodeError(corrupt(true, 1, [&](Vector& v) { v[2] = -nan; })),
              HasSubstr("aux[1]: row window csr.values"));
  EXPECT_THAT(DecodeError(corrupt(true, 0, [](Vector& v) { v[5] = 7; })),
              HasSubstr("aux[0]: row window header: nnz 7 outside [0, rows * cols]"));
  // An empty window must be entirely empty.
  std::vector<Vector> empty;
  RowWindow(4, 3).Encode(&empty);
  ASSERT_TRUE(RowWindow::Decode(empty, 0, 4, 3).ok());
  empty[4] = Vector::Zero(1);
  EXPECT_THAT(DecodeError(empty),
              HasSubstr("aux[4]: row window must be empty for an empty window"));
}

// The window reads dense rows where they sit (its copies, or the state's
// segment parts, 16 bytes off a 64-byte boundary): the row kernels must
// give the same bits at any address, or a trajectory would depend on it.
TEST(RowWindow, DenseRowKernelsGiveTheSameBitsWhereverTheRowSits) {
  std::mt19937_64 rng(11);
  for (int cols : {1, 3, 7, 8, 9, 16, 17, 33, 999, 1000, 1001}) {
    Batch b = RandomRows(3, cols, false, rng);
    b.dense += RowMatrix::Constant(3, cols, 0.37);  // no zeros: every term counts
    const Vector w = RandomVector(cols, rng);
    std::vector<double> store(static_cast<size_t>(3 * cols + 16));
    for (int offset = 0; offset < 8; ++offset) {
      Batch at;
      at.row_cols = cols;
      for (int i = 0; i < 3; ++i) {
        double* row = store.data() + offset + i * cols;
        std::memcpy(row, b.dense.row(i).data(), sizeof(double) * cols);
        at.row_ptrs.push_back(row);
      }
      ASSERT_EQ(at.rows(), 3);
      ASSERT_EQ(at.cols(), cols);
      for (int i = 0; i < 3; ++i) {
        const double d0 = RowDot(b, i, w.data()), d1 = RowDot(at, i, w.data());
        EXPECT_EQ(0, std::memcmp(&d0, &d1, sizeof d0)) << cols << " " << offset;
        const double n0 = RowSquaredNorm(b, i), n1 = RowSquaredNorm(at, i);
        EXPECT_EQ(0, std::memcmp(&n0, &n1, sizeof n0)) << cols << " " << offset;
        Vector a0 = w, a1 = w;
        RowAxpy(b, i, -0.61, a0.data());
        RowAxpy(at, i, -0.61, a1.data());
        EXPECT_EQ(0, std::memcmp(a0.data(), a1.data(), sizeof(double) * cols))
            << cols << " " << offset;
        // The multi-class kernels (logistic): W^T a_i and G += a_i r^T.
        constexpr int kClasses = 3;
        const Vector m = RandomVector(cols * kClasses, rng);
        Vector z0(kClasses), z1(kClasses);
        RowTimesMatrix(b, i, m.data(), kClasses, z0.data());
        RowTimesMatrix(at, i, m.data(), kClasses, z1.data());
        EXPECT_EQ(0, std::memcmp(z0.data(), z1.data(), sizeof(double) * kClasses));
        Vector g0 = m, g1 = m;
        RowOuterAdd(b, i, z0.data(), kClasses, g0.data());
        RowOuterAdd(at, i, z0.data(), kClasses, g1.data());
        EXPECT_EQ(0, std::memcmp(g0.data(), g1.data(), sizeof(double) * cols * kClasses));
      }
    }
  }
}

// A dense window holds its rows by address (Batch::row_ptrs; its `dense`
// is empty), and every simple family reads them through DenseRow: each
// evaluation on a window's view is bit for bit the one on a contiguous copy
// of the same rows, and the input check reads the rows too.  Code reading
// `b.dense` instead reads an empty matrix here, and fails this test in any
// build (it happened once: MeanGramSpectralNorm's Gram path, for
// few columns; 40 columns take the row passes).
TEST(RowWindow, EveryFamilyReadsAWindowOfRowAddressesAsItsRows) {
  std::mt19937_64 rng(8);
  for (const int cols : {6, 40}) {
    RowWindow w(9, cols);
    std::vector<std::shared_ptr<Vector>> segments;
    for (int step = 0; step < 4; ++step) {
      Batch b = RandomRows(3, cols, false, rng);
      for (int32_t& l : b.labels) l %= 3;
      segments.push_back(std::make_shared<Vector>(w.SegmentSize(b)));
      w.AppendAsSegment(b, segments.back().get(), segments.back());
    }
    const BatchView view = w.view();
    ASSERT_FALSE(view.batch->row_ptrs.empty());
    ASSERT_EQ(view.batch->dense.size(), 0);
    const Batch copy = w.CopyRows();
    const BatchView all = BatchView::All(copy);
    for (const std::string name : {"least_squares", "logistic", "linear_inverse"}) {
      const std::unique_ptr<SimpleFamily> f =
          MakeSimpleFamily(name, cols, name == "logistic" ? 3 : 0);
      const std::string where = name + " cols " + std::to_string(cols);
      const Vector x = 0.1 * RandomVector(f->x_dim(), rng);
      const Vector prev = 0.1 * RandomVector(f->x_dim(), rng);
      Vector g1, g2;
      EXPECT_EQ(f->G(x, view, &g1), f->G(x, all, &g2)) << where;
      EXPECT_EQ(g1, g2) << where;
      if (f->upper_reads_rows()) {
        EXPECT_EQ(f->F(x, view, &g1), f->F(x, all, &g2)) << where;
        EXPECT_EQ(g1, g2) << where;
        EXPECT_EQ(f->SmoothnessF(view), f->SmoothnessF(all)) << where;
        EXPECT_EQ(f->Accuracy(x, view).value_or(-1), f->Accuracy(x, all).value_or(-1)) << where;
      }
      EXPECT_EQ(f->SmoothnessG(view), f->SmoothnessG(all)) << where;
      const std::optional<double> o1 = f->OuterOptimum(view, view, ConstraintSet::L1Ball(2.0));
      const std::optional<double> o2 = f->OuterOptimum(all, all, ConstraintSet::L1Ball(2.0));
      EXPECT_EQ(o1.value_or(-1), o2.value_or(-1)) << where;
      for (int k = 0; k < view.rows.n; ++k) {
        EXPECT_EQ(f->RowGradientBound(*view.batch, view.rows.row(k), 2.0),
                  f->RowGradientBound(copy, k, 2.0))
            << where;
      }
      if (f->HasStormPass()) {
        const Vector before = RandomVector(f->x_dim(), rng);
        StormPassIn in{BatchRole::kInner, &view, &x, &prev, &x, 0.5, &before};
        Vector e1, e2;
        const StormPassOut s1 = f->StormPass(in, &e1);
        in.view = &all;
        const StormPassOut s2 = f->StormPass(in, &e2);
        EXPECT_EQ(e1, e2) << where;
        EXPECT_EQ(s1.value_x, s2.value_x) << where;
        EXPECT_EQ(s1.value_at, s2.value_at) << where;
      }
      EXPECT_TRUE(f->ValidateBatch(*view.batch, BatchRole::kInner).ok()) << where;
    }
    // The input check reads the rows where they are.
    const double saved = *const_cast<double*>(view.batch->DenseRow(view.rows.row(4)) + 2);
    *const_cast<double*>(view.batch->DenseRow(view.rows.row(4)) + 2) = std::nan("");
    const std::unique_ptr<SimpleFamily> f = MakeSimpleFamily("least_squares", cols);
    EXPECT_THAT(std::string(f->ValidateBatch(*view.batch, BatchRole::kInner).message()),
                HasSubstr(absl::StrCat("feature (row ", view.rows.row(4), ", column 2) is not")));
    *const_cast<double*>(view.batch->DenseRow(view.rows.row(4)) + 2) = saved;
  }
}

// A segment's rows start on a cache line (its header takes 64 bytes and
// Eigen allocates vectors 64-byte aligned on AVX-512 builds), so a window
// reading rows of a multiple of 8 columns in their segments loads no
// vector across two lines (AGM-BiO's passes over rows 16 bytes
// off took 25-35% longer).
TEST(RowWindow, SegmentRowsStartOnACacheLine) {
#if EIGEN_MAX_ALIGN_BYTES < 64
  GTEST_SKIP() << "Eigen aligns vectors to " << EIGEN_MAX_ALIGN_BYTES << " bytes in this build";
#endif
  std::mt19937_64 rng(2);
  RowWindow w(100, 16);
  std::vector<std::shared_ptr<Vector>> segments;
  for (int step = 0; step < 5; ++step) {
    const Batch b = RandomRows(3, 16, false, rng);
    segments.push_back(std::make_shared<Vector>(w.SegmentSize(b)));
    w.AppendAsSegment(b, segments.back().get(), segments.back());
  }
  const BatchView v = w.view();
  ASSERT_EQ(v.rows.n, 15);
  for (int k = 0; k < v.rows.n; ++k) {
    const auto at = reinterpret_cast<uintptr_t>(v.batch->DenseRow(v.rows.row(k)));
    EXPECT_EQ(at % 64, 0u) << "row " << k;
  }
}

// AppendAsSegment writes the segment EncodeNewest would, and a dense window
// then reads its rows in it: the same rows as Append's window, the segment
// kept alive by the window until its last row is dropped.
TEST(RowWindow, AppendAsSegmentReadsItsRowsInTheSegment) {
  for (const bool first_csr : {false, true}) {
    std::mt19937_64 rng(5);
    RowWindow copied(7, 4), in_place(7, 4);
    std::vector<std::weak_ptr<const Vector>> segments;
    for (int step = 0; step < 12; ++step) {
      // The first batch fixes the storage; later ones mix storages.
      const bool csr = step == 0 ? first_csr : step % 3 == 1;
      const Batch b = RandomRows(1 + step % 4, 4, csr, rng);
      auto segment = std::make_shared<Vector>(in_place.SegmentSize(b));
      const int before = copied.size();
      copied.Append(b);
      in_place.AppendAsSegment(b, segment.get(), segment);
      const int take = std::min(b.rows(), 7);
      Vector expected;
      copied.EncodeNewest(take, &expected);
      ASSERT_EQ(segment->size(), expected.size()) << step;
      EXPECT_EQ(0, std::memcmp(segment->data(), expected.data(), sizeof(double) * expected.size()))
          << step;
      const Batch ra = copied.CopyRows(), rb = in_place.CopyRows();
      ASSERT_EQ(ra.sparse_features, first_csr);
      ASSERT_EQ(rb.sparse_features, first_csr);
      EXPECT_EQ(DenseOf(ra), DenseOf(rb)) << step;
      EXPECT_EQ(ra.labels, rb.labels);
      EXPECT_EQ(ra.targets, rb.targets);
      EXPECT_EQ(in_place.size(), std::min(7, before + b.rows()));
      if (first_csr) continue;
      // The newest row is read in the segment itself.
      const BatchView v = in_place.view();
      const double* newest = v.batch->DenseRow(v.rows.row(v.rows.n - 1));
      EXPECT_EQ(newest,
                segment->data() + RowWindow::kSegmentHeader + static_cast<int64_t>(take - 1) * 4);
      segments.push_back(segment);
    }
    if (first_csr) continue;
    // Held only by the window now: its live rows' segments stay, the
    // others (every row dropped) are released.
    int live = 0;
    for (const auto& s : segments) live += s.expired() ? 0 : 1;
    EXPECT_GT(live, 0);
    EXPECT_LT(live, static_cast<int>(segments.size()));
    EXPECT_FALSE(segments.back().expired());
    EXPECT_TRUE(segments.front().expired());
  }
}

}  // namespace
}  // namespace f2obo::testing
