#include "core/state_parts.h"

#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace f2obo {
namespace {

using ::testing::ElementsAre;

std::vector<size_t> Changed(const StateParts& now, const StateParts& base) {
  std::vector<size_t> out;
  now.ForEachChanged(base, [&](size_t i) { out.push_back(i); });
  return out;
}

StateParts Numbered(size_t n) {
  StateParts p;
  for (size_t i = 0; i < n; ++i) p.push_back(Vector::Constant(2, static_cast<double>(i)));
  return p;
}

TEST(StateParts, ACopySharesEveryPartUntilOneIsWritten) {
  const StateParts base = Numbered(10000);  // beyond one top table (4,096)
  StateParts copy = base;
  EXPECT_TRUE(Changed(copy, base).empty());
  for (size_t i : {0u, 4095u, 4096u, 9999u}) EXPECT_TRUE(copy.SamePart(base, i)) << i;

  copy[4096][1] = -1.0;
  copy.Mutable(7)[0] = 70.0;
  EXPECT_THAT(Changed(copy, base), ElementsAre(7, 4096));
  // The source is untouched, the copy has its writes.
  EXPECT_EQ(base[4096][1], 4096.0);
  EXPECT_EQ(base[7][0], 7.0);
  EXPECT_EQ(copy[4096][1], -1.0);
  EXPECT_EQ(copy[7][0], 70.0);
  // A neighbour in the same leaf stays the same object.
  EXPECT_TRUE(copy.SamePart(base, 8));
  EXPECT_TRUE(copy.SamePart(base, 4097));
}

TEST(StateParts, ASecondWriteToAnUnsharedPartIsInPlace) {
  const StateParts base = Numbered(3);
  StateParts copy = base;
  Vector& first = copy[1];
  first[0] = 5.0;
  Vector& again = copy[1];
  EXPECT_EQ(&first, &again);
  copy[2][0] = 9.0;  // another part of the same leaf: `first` stays valid
  EXPECT_EQ(&first, &copy[1]);
  EXPECT_EQ(first[0], 5.0);
}

TEST(StateParts, AWriteToTheSourceLeavesACopyAlone) {
  StateParts base = Numbered(100);
  const StateParts copy = base;
  base[50] = Vector::Zero(3);
  EXPECT_EQ(copy[50].size(), 2);
  EXPECT_EQ(copy[50][0], 50.0);
  EXPECT_THAT(Changed(base, copy), ElementsAre(50));
}

TEST(StateParts, GrowthIsReportedAndEmptyPartsCostNoVector) {
  const StateParts base = Numbered(5);
  StateParts grown = base;
  grown.resize(8);  // empty parts
  grown.push_back(Vector::Ones(1));
  EXPECT_EQ(grown.size(), 9u);
  EXPECT_EQ(std::as_const(grown)[6].size(), 0);
  EXPECT_THAT(Changed(grown, base), ElementsAre(5, 6, 7, 8));
  // Two empty parts are the same (nothing), wherever they came from.
  StateParts other;
  other.resize(8);
  EXPECT_TRUE(grown.SamePart(other, 6));
}

TEST(StateParts, ShrinkingThenGrowingFindsEmptyParts) {
  StateParts p = Numbered(70);
  const StateParts keep = p;
  p.resize(3);
  p.resize(70);
  for (size_t i = 3; i < 70; ++i) EXPECT_EQ(p[i].size(), 0) << i;
  for (size_t i = 0; i < 70; ++i) EXPECT_EQ(keep[i][0], static_cast<double>(i)) << i;
}

TEST(StateParts, IteratesInOrder) {
  const StateParts p = Numbered(130);
  double expected = 0;
  size_t n = 0;
  for (const Vector& v : p) {
    EXPECT_EQ(v[0], expected++);
    ++n;
  }
  EXPECT_EQ(n, 130u);
  EXPECT_EQ(p.payload_bytes(), 130u * 2 * sizeof(double));
}

TEST(StateParts, ConvertsFromAVectorOfVectors) {
  const StateParts p = std::vector<Vector>{Vector::Ones(1), Vector(), Vector::Zero(4)};
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[0][0], 1.0);
  EXPECT_EQ(p[1].size(), 0);
  EXPECT_EQ(p[2].size(), 4);
}

// Fresh parts (a window's segment each step): the right size, the
// IsInput mark only as asked, shared by copies, and gone once the part is
// written through Mutable or Set (then it holds what its writer computed).
TEST(StateParts, FreshPartsCarryTheInputMarkUntilWritten) {
  StateParts p = Numbered(3);
  Vector& fresh = p.Fresh(1, 5, /*input=*/true);
  EXPECT_EQ(fresh.size(), 5);
  fresh.setConstant(7.0);
  EXPECT_TRUE(p.IsInput(1));
  EXPECT_FALSE(p.IsInput(0));
  EXPECT_FALSE(p.IsInput(7));  // beyond the parts
  p.Fresh(2, 4, /*input=*/false).setZero();
  EXPECT_FALSE(p.IsInput(2));

  StateParts copy = p;  // shares part 1, mark and all
  EXPECT_TRUE(copy.IsInput(1));
  copy.Mutable(1)[0] = 1e300;  // copy-on-write: a new part, unmarked
  EXPECT_FALSE(copy.IsInput(1));
  EXPECT_TRUE(p.IsInput(1));
  EXPECT_EQ(std::as_const(p)[1][0], 7.0);

  StateParts alone;
  alone.resize(1);
  alone.Fresh(0, 2, true).setZero();
  alone.Mutable(0)[0] = 1.0;  // unshared: written in place, mark cleared
  EXPECT_FALSE(alone.IsInput(0));
  alone.Fresh(0, 2, true).setZero();
  alone.Set(0, Vector::Ones(2));  // reuses the part: mark cleared
  EXPECT_FALSE(alone.IsInput(0));
}

// A fresh part of a freed part's size reuses its storage (the pool), and
// the recycled contents are the caller's to overwrite.
TEST(StateParts, FreshPartsRecycleFreedStorageOfTheirSize) {
  constexpr Eigen::Index kLarge = 1 << 15;  // pooled sizes start at 16,384
  StateParts p;
  p.resize(1);
  p.Fresh(0, kLarge, true).setConstant(3.0);
  const double* storage = std::as_const(p)[0].data();
  p.clear();  // the last owner drops the part: its vector goes to the pool
  p.resize(1);
  EXPECT_EQ(p.Fresh(0, kLarge, true).data(), storage);
}

}  // namespace
}  // namespace f2obo
