// The row windows of the windowed algorithms (IR-FSCG, AGM-BiO) in aux:
// the last W rows of each kind, widths learned from the first rows, and
// windows a family would not accept refused naming their aux index.
#include "core/simple/algorithms/stream_windows.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/core/simple/algorithms/simple_test_support.h"

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

TEST(StreamWindows, KeepTheLastWRowsOfEachKindOldestFirst) {
  Picky family;
  StreamWindows w(5);
  StateParts aux = {Vector::Zero(1)};  // windows from aux[1]
  w.AppendInitial(&aux);
  ASSERT_EQ(static_cast<int>(aux.size()), 1 + StreamWindows::kVectors);
  ASSERT_TRUE(w.Validate(aux, 1).ok()) << w.Validate(aux, 1);
  ASSERT_TRUE(w.LoadAndAppend(aux, 1, family, StepData{Numbered(0, 3), Batch{}}).ok());
  w.Store(1, &aux);
  ASSERT_TRUE(w.Validate(aux, 1).ok());
  EXPECT_EQ(aux[1][0], 3.0);  // the upper width, learned
  EXPECT_EQ(aux[1][1], 0.0);  // no inner rows yet
  StreamWindows again(5);
  ASSERT_TRUE(again.LoadAndAppend(aux, 1, family, StepData{Numbered(3, 4), Numbered(50, 2)}).ok());
  EXPECT_EQ(again.upper().targets, Vector::LinSpaced(5, 2, 6));
  EXPECT_EQ(again.upper().dense.col(1), Vector::LinSpaced(5, 2, 6));
  EXPECT_EQ(again.inner().targets, Vector::LinSpaced(2, 50, 51));
}

TEST(StreamWindows, AStepOfAnotherWidthThanTheWindowIsRefused) {
  Picky family;
  StreamWindows w(5);
  StateParts aux;
  w.AppendInitial(&aux);
  ASSERT_TRUE(w.LoadAndAppend(aux, 0, family, StepData{Batch{}, Numbered(0, 2)}).ok());
  w.Store(0, &aux);
  const absl::Status st = w.LoadAndAppend(aux, 0, family, StepData{Batch{}, Numbered(0, 2, 4)});
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(st.message()),
              StartsWith("aux[0]: the inner window holds rows of 3 columns and the step's inner "
                         "batch has 4"));
}

// Rows a state brings from outside are checked by the family before use:
// once, when the state is restored (ValidateRows, which SimpleProblem's
// ValidateRestored calls), not at every step.
TEST(StreamWindows, RowsTheFamilyRefusesAreRefusedNamingTheirAux) {
  Picky family;
  StreamWindows w(5);
  StateParts aux;
  w.AppendInitial(&aux);
  EXPECT_TRUE(w.ValidateRows(aux, 0, family).ok()) << "empty windows";
  ASSERT_TRUE(w.LoadAndAppend(aux, 0, family, StepData{Numbered(97, 2), Batch{}}).ok());
  w.Store(0, &aux);
  EXPECT_TRUE(w.ValidateRows(aux, 0, family).ok()) << "targets 97, 98";
  ASSERT_TRUE(w.LoadAndAppend(aux, 0, family, StepData{Numbered(99, 3), Batch{}}).ok());
  w.Store(0, &aux);  // holds the target 101, which the family would refuse
  const absl::Status st = w.ValidateRows(aux, 0, family);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(st.message()),
              StartsWith("aux[1]: the upper window's rows are not ones this family accepts: "
                         "targets: above 100"));
}

TEST(StreamWindows, WidthsThatAreNotWholeNumbersAreRefused) {
  StreamWindows w(5);
  StateParts aux;
  w.AppendInitial(&aux);
  aux[0][1] = 2.5;
  EXPECT_THAT(std::string(w.Validate(aux, 0).message()),
              HasSubstr("aux[0]: the inner window's width 2.5 is not a whole number"));
  aux[0].resize(3);
  EXPECT_THAT(std::string(w.Validate(aux, 0).message()),
              HasSubstr("aux[0]: has 3 entries, expected 2"));
  aux.pop_back();
  EXPECT_THAT(std::string(w.Validate(aux, 0).message()), HasSubstr("missing"));
}

}  // namespace
}  // namespace f2obo::testing
