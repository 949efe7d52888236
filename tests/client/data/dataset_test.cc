#include "client/data/dataset.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdio>
#include <fstream>
#include <string>

namespace f2obo::data {
namespace {

using ::testing::HasSubstr;

std::string TempPath(const std::string& name) { return ::testing::TempDir() + name; }

void WriteFile(const std::string& path, const std::string& bytes, bool gzip) {
  if (gzip) {
    gzFile f = gzopen(path.c_str(), "wb");
    gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
    gzclose(f);
  } else {
    std::ofstream(path, std::ios::binary) << bytes;
  }
}

std::string Be32(uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
          static_cast<char>(v)};
}

// Two 2x2 images with labels 3 and 7.
void WriteTinyIdx(const std::string& images, const std::string& labels, bool gzip) {
  std::string img = Be32(0x803) + Be32(2) + Be32(2) + Be32(2);
  for (int p : {0, 255, 51, 102, 255, 0, 0, 255}) img.push_back(static_cast<char>(p));
  WriteFile(images, img, gzip);
  WriteFile(labels, Be32(0x801) + Be32(2) + std::string{3, 7}, gzip);
}

TEST(ReadIdx, ReadsPlainAndGzipFilesScalingPixelsToUnitInterval) {
  for (bool gzip : {false, true}) {
    const std::string im = TempPath("im.idx"), lb = TempPath("lb.idx");
    WriteTinyIdx(im, lb, gzip);
    const auto d = ReadIdx(im, lb);
    ASSERT_TRUE(d.ok()) << d.status();
    EXPECT_EQ(d->rows(), 2);
    EXPECT_EQ(d->features(), 4);
    EXPECT_EQ(d->labels, (std::vector<int32_t>{3, 7}));
    EXPECT_EQ(d->classes, 8);
    EXPECT_DOUBLE_EQ(d->dense(0, 1), 1.0);
    EXPECT_DOUBLE_EQ(d->dense(0, 2), 0.2);
    EXPECT_DOUBLE_EQ(d->dense(1, 3), 1.0);
  }
}

TEST(ReadIdx, RejectsWrongMagicAndTruncatedFiles) {
  const std::string im = TempPath("bad.idx"), lb = TempPath("badl.idx");
  WriteTinyIdx(im, lb, false);
  EXPECT_THAT(std::string(ReadIdx(lb, lb).status().message()), HasSubstr("not an IDX3"));
  WriteFile(im, Be32(0x803) + Be32(2) + Be32(2) + Be32(2) + "abc", false);
  EXPECT_THAT(std::string(ReadIdx(im, lb).status().message()), HasSubstr("sizes disagree"));
  EXPECT_EQ(ReadIdx(TempPath("missing"), lb).status().code(), absl::StatusCode::kNotFound);
}

TEST(ReadLibsvm, BuildsCsrWithOneBasedIndices) {
  const std::string p = TempPath("a.svm");
  WriteFile(p, "1 1:0.5 3:2\n# comment\n0 2:-1 # tail\n2\n", false);
  const auto d = ReadLibsvm(p);
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_TRUE(d->sparse);
  EXPECT_EQ(d->rows(), 3);
  EXPECT_EQ(d->features(), 3);
  EXPECT_EQ(d->csr.coeff(0, 0), 0.5);
  EXPECT_EQ(d->csr.coeff(0, 2), 2.0);
  EXPECT_EQ(d->csr.coeff(1, 1), -1.0);
  EXPECT_EQ(d->csr.nonZeros(), 3);
  EXPECT_EQ(d->labels, (std::vector<int32_t>{1, 0, 2}));
  WriteFile(p, "1 3:1 2:1\n", false);
  EXPECT_THAT(std::string(ReadLibsvm(p).status().message()),
              HasSubstr("a.svm:1: bad feature '2:1'"));
  WriteFile(p, "-1 1:1\n", false);
  EXPECT_THAT(std::string(ReadLibsvm(p).status().message()), HasSubstr("not a class index"));
}

TEST(ReadCsv, SkipsAHeaderAndTakesTheLabelColumn) {
  const std::string p = TempPath("a.csv");
  WriteFile(p, "f1,f2,label\n1,2,0\n3,4,2\n", false);
  const auto d = ReadCsv(p);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->rows(), 2);
  EXPECT_EQ(d->features(), 2);
  EXPECT_EQ(d->dense(1, 0), 3.0);
  EXPECT_EQ(d->labels, (std::vector<int32_t>{0, 2}));
  const auto first = ReadCsv(p, 0);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->dense(0, 1), 0.0);  // columns f2, label remain
  WriteFile(p, "1.5,2,0.25\n", false);
  const auto regression = ReadCsv(p);
  ASSERT_TRUE(regression.ok());
  EXPECT_TRUE(regression->labels.empty());  // real targets: regression only
  EXPECT_DOUBLE_EQ(regression->targets[0], 0.25);
  WriteFile(p, "1,2,3\n1,2\n", false);
  EXPECT_THAT(std::string(ReadCsv(p).status().message()), HasSubstr("2 columns, expected 3"));
}

}  // namespace
}  // namespace f2obo::data
