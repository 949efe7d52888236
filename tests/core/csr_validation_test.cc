// CSR features are indexed without bounds checks by the row kernels
// (core/features.h), so every malformed structure must be refused up front,
// with INVALID_ARGUMENT naming the offending row or entry: by MakeCsr for raw
// arrays from the wire, and by ValidateFeatures for a CsrMatrix assembled
// in-process.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/batch.h"

namespace f2obo {
namespace {

using ::testing::HasSubstr;

constexpr double kInf = std::numeric_limits<double>::infinity();

struct CsrCase {
  const char* name;
  int rows;
  int cols;
  std::vector<int64_t> indptr;
  std::vector<int32_t> indices;
  std::vector<double> values;
  const char* needle;
};

TEST(MakeCsr, EveryMalformedStructureIsRejectedNamingTheRowOrEntry) {
  const CsrCase cases[] = {
      {"negative rows", -1, 4, {0}, {}, {}, "negative shape -1 x 4"},
      {"negative cols", 1, -4, {0, 0}, {}, {}, "negative shape 1 x -4"},
      {"indptr too short",
       2,
       4,
       {0, 1},
       {0},
       {1.0},
       "indptr: has 2 entries, expected rows + 1 = 3"},
      {"indptr too long",
       1,
       4,
       {0, 1, 1},
       {0},
       {1.0},
       "indptr: has 3 entries, expected rows + 1 = 2"},
      {"indptr for INT_MAX rows does not overflow",
       std::numeric_limits<int>::max(),
       4,
       {0},
       {},
       {},
       "expected rows + 1 = 2147483648"},
      {"indices and values differ in length",
       2,
       4,
       {0, 1, 2},
       {0, 1},
       {1.0},
       "2 indices but 1 values"},
      {"indptr[0] not 0",
       2,
       4,
       {1, 1, 2},
       {0, 1},
       {1.0, 1.0},
       "must start at 0 and end at nnz = 2, got 1 .. 2"},
      {"last indptr below nnz",
       2,
       4,
       {0, 1, 1},
       {0, 1},
       {1.0, 1.0},
       "must start at 0 and end at nnz = 2, got 0 .. 1"},
      {"last indptr above nnz",
       2,
       4,
       {0, 1, 3},
       {0, 1},
       {1.0, 1.0},
       "must start at 0 and end at nnz = 2, got 0 .. 3"},
      {"indptr decreases",
       3,
       4,
       {0, 2, 1, 2},
       {0, 1},
       {1.0, 1.0},
       "indptr: decreases at row 1 (indptr[1] = 2, indptr[2] = 1)"},
      {"indptr negative mid-way",
       2,
       4,
       {0, -1, 2},
       {0, 1},
       {1.0, 1.0},
       "indptr: decreases at row 0"},
      // Row 0 would read indices[0..3) of a 2-entry array; refused before
      // any column is read.
      {"indptr above nnz mid-way",
       3,
       4,
       {0, 3, 1, 2},
       {0, 1},
       {1.0, 1.0},
       "indptr[1] = 3 exceeds nnz = 2 (row 0)"},
      {"column negative",
       2,
       4,
       {0, 1, 2},
       {0, -1},
       {1.0, 1.0},
       "csr.indices[1]: column -1 outside [0, 4) (row 1)"},
      {"column equal to cols",
       2,
       4,
       {0, 1, 2},
       {4, 1},
       {1.0, 1.0},
       "csr.indices[0]: column 4 outside [0, 4) (row 0)"},
      {"column far out", 2, 4, {0, 1, 2}, {0, 9}, {1.0, 1.0}, "column 9 outside [0, 4)"},
      {"columns decrease within a row",
       2,
       4,
       {0, 0, 2},
       {3, 1},
       {1.0, 1.0},
       "csr.indices: row 1 columns not strictly increasing at 1 (column 1 after 3)"},
      // Duplicates are refused, not summed: see CheckCsrStructure.
      {"duplicate column within a row",
       2,
       4,
       {0, 2, 3},
       {2, 2, 0},
       {1.0, 1.0, 1.0},
       "csr.indices: row 0 columns not strictly increasing at 1 (column 2 after 2, "
       "a duplicate)"},
      {"NaN value",
       2,
       4,
       {0, 1, 2},
       {0, 1},
       {1.0, std::nan("")},
       "csr.values[1]: not finite (row 1, column 1)"},
      {"+inf value",
       2,
       4,
       {0, 1, 2},
       {0, 1},
       {kInf, 1.0},
       "csr.values[0]: not finite (row 0, column 0)"},
      {"-inf value",
       2,
       4,
       {0, 2, 2},
       {0, 3},
       {1.0, -kInf},
       "csr.values[1]: not finite (row 0, column 3)"},
  };
  for (const CsrCase& c : cases) {
    SCOPED_TRACE(c.name);
    const auto m = MakeCsr(c.rows, c.cols, c.indptr, c.indices, c.values);
    ASSERT_FALSE(m.ok());
    EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(m.status().message()), HasSubstr(c.needle));
  }
}

TEST(MakeCsr, AcceptsEmptyRowsAndEmptyMatrices) {
  const auto m = MakeCsr(4, 5, {0, 0, 2, 2, 3}, {1, 4, 0}, {1.0, -2.0, 3.0});
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->rows(), 4);
  EXPECT_EQ(m->cols(), 5);
  EXPECT_EQ(m->nonZeros(), 3);
  EXPECT_EQ(m->coeff(1, 1), 1.0);
  EXPECT_EQ(m->coeff(1, 4), -2.0);
  EXPECT_EQ(m->coeff(3, 0), 3.0);
  EXPECT_EQ(m->coeff(0, 0), 0.0);

  const auto none = MakeCsr(0, 3, {0}, {}, {});
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(none->rows(), 0);
  const auto no_cols = MakeCsr(2, 0, {0, 0, 0}, {}, {});
  ASSERT_TRUE(no_cols.ok()) << no_cols.status();
  EXPECT_EQ(no_cols->nonZeros(), 0);
}

// A valid 3 x 4 batch with entries (0,0) (0,2) (1,1) (2,0) (2,3).
Batch ValidCsrBatch() {
  Batch b;
  b.sparse_features = true;
  b.csr = *MakeCsr(3, 4, {0, 2, 3, 5}, {0, 2, 1, 0, 3}, {1.0, 2.0, 3.0, 4.0, 5.0});
  return b;
}

TEST(ValidateFeatures, AcceptsAValidCsrBatch) {
  const Batch b = ValidCsrBatch();
  EXPECT_TRUE(ValidateFeatures(b, 4, "inner batch").ok());
}

// The same checks on a CsrMatrix whose raw arrays were written in-process.
TEST(ValidateFeatures, RefusesACorruptedCsrMatrixNamingTheRowOrEntry) {
  struct Spoil {
    const char* name;
    void (*spoil)(CsrMatrix*);
    const char* needle;
  };
  const Spoil cases[] = {
      {"column out of range", [](CsrMatrix* m) { m->innerIndexPtr()[3] = 4; },
       "inner batch: csr.indices[3]: column 4 outside [0, 4) (row 2)"},
      {"negative column", [](CsrMatrix* m) { m->innerIndexPtr()[2] = -7; },
       "inner batch: csr.indices[2]: column -7 outside [0, 4) (row 1)"},
      {"duplicate column", [](CsrMatrix* m) { m->innerIndexPtr()[1] = 0; },
       "inner batch: csr.indices: row 0 columns not strictly increasing at 1"},
      {"decreasing columns",
       [](CsrMatrix* m) {
         m->innerIndexPtr()[3] = 3;
         m->innerIndexPtr()[4] = 1;
       },
       "inner batch: csr.indices: row 2 columns not strictly increasing at 4 (column 1 "
       "after 3)"},
      {"decreasing offsets", [](CsrMatrix* m) { m->outerIndexPtr()[2] = 1; },
       "inner batch: csr.indptr: decreases at row 1"},
      {"offset past the stored entries", [](CsrMatrix* m) { m->outerIndexPtr()[3] = 1000; },
       "inner batch: csr.indptr[3] = 1000 exceeds nnz = 5 (row 2)"},
      {"negative first offset", [](CsrMatrix* m) { m->outerIndexPtr()[0] = -1; },
       "inner batch: csr.indptr[0] = -1 outside [0, 5]"},
      {"NaN value", [](CsrMatrix* m) { m->valuePtr()[4] = std::nan(""); },
       "inner batch: csr.values[4]: not finite (row 2, column 3)"},
      {"infinite value", [](CsrMatrix* m) { m->valuePtr()[0] = -kInf; },
       "inner batch: csr.values[0]: not finite (row 0, column 0)"},
  };
  for (const Spoil& c : cases) {
    SCOPED_TRACE(c.name);
    Batch b = ValidCsrBatch();
    c.spoil(&b.csr);
    const absl::Status st = ValidateFeatures(b, 4, "inner batch");
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(st.message()), HasSubstr(c.needle));
  }
}

TEST(ValidateFeatures, RefusesAnUncompressedCsrMatrix) {
  Batch b = ValidCsrBatch();
  b.csr.uncompress();
  const absl::Status st = ValidateFeatures(b, 4, "upper batch");
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(st.message()), HasSubstr("upper batch: csr features must be compressed"));
}

TEST(ValidateFeatures, RefusesAWrongWidthOrEmptyCsrBatch) {
  Batch b = ValidCsrBatch();
  EXPECT_THAT(std::string(ValidateFeatures(b, 5, "upper batch").message()),
              HasSubstr("rows have 4 features, the session expects 5"));
  Batch empty;
  empty.sparse_features = true;
  empty.csr = *MakeCsr(0, 4, {0}, {}, {});
  EXPECT_THAT(std::string(ValidateFeatures(empty, 4, "upper batch").message()),
              HasSubstr("upper batch: empty batch"));
}

}  // namespace
}  // namespace f2obo
