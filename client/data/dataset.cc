#include "client/data/dataset.h"

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace f2obo::data {
namespace {

// Whole file through zlib (which reads plain files transparently too).
absl::StatusOr<std::string> ReadMaybeGzip(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  std::string out;
  char buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof(buf))) > 0) out.append(buf, n);
  const bool failed = n < 0;
  gzclose(f);
  if (failed) return absl::DataLossError(absl::StrCat(path, ": read/decompress error"));
  return out;
}

uint32_t BigEndian32(const std::string& s, size_t at) {
  return (uint32_t{static_cast<unsigned char>(s[at])} << 24) |
         (uint32_t{static_cast<unsigned char>(s[at + 1])} << 16) |
         (uint32_t{static_cast<unsigned char>(s[at + 2])} << 8) |
         uint32_t{static_cast<unsigned char>(s[at + 3])};
}

int ClassesOf(const std::vector<int32_t>& labels) {
  int32_t max = -1;
  for (int32_t l : labels) max = std::max(max, l);
  return max + 1;
}

absl::StatusOr<int32_t> ParseLabel(absl::string_view s, const std::string& where) {
  double v;
  if (!absl::SimpleAtod(s, &v) || v < 0 || v != std::floor(v) || v > 1e6) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": label '", s, "' is not a class index >= 0"));
  }
  return static_cast<int32_t>(v);
}

}  // namespace

absl::StatusOr<Dataset> ReadIdx(const std::string& images_path, const std::string& labels_path) {
  absl::StatusOr<std::string> img = ReadMaybeGzip(images_path);
  if (!img.ok()) return img.status();
  absl::StatusOr<std::string> lab = ReadMaybeGzip(labels_path);
  if (!lab.ok()) return lab.status();
  if (img->size() < 16 || BigEndian32(*img, 0) != 0x00000803) {
    return absl::InvalidArgumentError(
        absl::StrCat(images_path, ": not an IDX3 unsigned-byte image file"));
  }
  if (lab->size() < 8 || BigEndian32(*lab, 0) != 0x00000801) {
    return absl::InvalidArgumentError(
        absl::StrCat(labels_path, ": not an IDX1 unsigned-byte label file"));
  }
  const uint32_t n = BigEndian32(*img, 4);
  const uint64_t pixels = uint64_t{BigEndian32(*img, 8)} * BigEndian32(*img, 12);
  if (BigEndian32(*lab, 4) != n || img->size() != 16 + n * pixels ||
      lab->size() != 8 + uint64_t{n}) {
    return absl::InvalidArgumentError(
        absl::StrCat(images_path, ", ", labels_path, ": sizes disagree with the headers"));
  }
  Dataset d;
  d.dense.resize(n, static_cast<Eigen::Index>(pixels));
  const unsigned char* p = reinterpret_cast<const unsigned char*>(img->data()) + 16;
  for (uint64_t k = 0; k < uint64_t{n} * pixels; ++k) d.dense.data()[k] = p[k] / 255.0;
  d.labels.resize(n);
  for (uint32_t i = 0; i < n; ++i) d.labels[i] = static_cast<unsigned char>((*lab)[8 + i]);
  d.targets = Eigen::Map<const Eigen::VectorXi>(d.labels.data(), n).cast<double>();
  d.classes = ClassesOf(d.labels);
  return d;
}

absl::StatusOr<Dataset> ReadLibsvm(const std::string& path, int features) {
  absl::StatusOr<std::string> text = ReadMaybeGzip(path);
  if (!text.ok()) return text.status();
  std::vector<Eigen::Triplet<double>> entries;
  Dataset d;
  int max_index = 0, line_no = 0, row = 0;
  for (absl::string_view line : absl::StrSplit(*text, '\n')) {
    ++line_no;
    line = absl::StripAsciiWhitespace(line.substr(0, line.find('#')));
    if (line.empty()) continue;
    const std::string where = absl::StrCat(path, ":", line_no);
    std::vector<absl::string_view> tokens =
        absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    absl::StatusOr<int32_t> label = ParseLabel(tokens[0], where);
    if (!label.ok()) return label.status();
    d.labels.push_back(*label);
    int previous = 0;
    for (size_t k = 1; k < tokens.size(); ++k) {
      const size_t colon = tokens[k].find(':');
      int index;
      double value;
      if (colon == absl::string_view::npos ||
          !absl::SimpleAtoi(tokens[k].substr(0, colon), &index) ||
          !absl::SimpleAtod(tokens[k].substr(colon + 1), &value) || index <= previous ||
          !std::isfinite(value)) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, ": bad feature '", tokens[k], "' (want increasing index:value)"));
      }
      previous = index;
      max_index = std::max(max_index, index);
      entries.emplace_back(row, index - 1, value);
    }
    ++row;
  }
  if (row == 0) return absl::InvalidArgumentError(absl::StrCat(path, ": no rows"));
  if (features == 0) features = max_index;
  if (max_index > features) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": feature index ", max_index, " exceeds features = ", features));
  }
  d.sparse = true;
  d.csr.resize(row, features);
  d.csr.setFromTriplets(entries.begin(), entries.end());
  d.csr.makeCompressed();
  d.targets = Eigen::Map<const Eigen::VectorXi>(d.labels.data(), row).cast<double>();
  d.classes = ClassesOf(d.labels);
  return d;
}

absl::StatusOr<Dataset> ReadCsv(const std::string& path, int label_column) {
  absl::StatusOr<std::string> text = ReadMaybeGzip(path);
  if (!text.ok()) return text.status();
  std::vector<std::vector<double>> rows;
  int line_no = 0;
  size_t width = 0;
  for (absl::string_view line : absl::StrSplit(*text, '\n')) {
    ++line_no;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty()) continue;
    std::vector<double> values;
    bool numeric = true;
    for (absl::string_view cell : absl::StrSplit(line, ',')) {
      double v;
      numeric = numeric && absl::SimpleAtod(absl::StripAsciiWhitespace(cell), &v);
      values.push_back(numeric ? v : 0.0);
    }
    if (!numeric) {
      if (rows.empty() && line_no == 1) continue;  // header
      return absl::InvalidArgumentError(
          absl::StrCat(path, ":", line_no, ": a cell is not a number"));
    }
    if (width == 0) width = values.size();
    if (values.size() != width || width < 2) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ":", line_no, ": ", values.size(), " columns, expected ", width));
    }
    rows.push_back(std::move(values));
  }
  if (rows.empty()) return absl::InvalidArgumentError(absl::StrCat(path, ": no rows"));
  const int w = static_cast<int>(width);
  const int label = label_column < 0 ? w + label_column : label_column;
  if (label < 0 || label >= w) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": label column ", label_column, " outside ", w, " columns"));
  }
  Dataset d;
  d.dense.resize(static_cast<Eigen::Index>(rows.size()), w - 1);
  d.targets.resize(static_cast<Eigen::Index>(rows.size()));
  bool integral = true;
  for (size_t i = 0; i < rows.size(); ++i) {
    for (int j = 0, out = 0; j < w; ++j) {
      if (j != label) d.dense(static_cast<Eigen::Index>(i), out++) = rows[i][j];
    }
    const double y = rows[i][label];
    d.targets[static_cast<Eigen::Index>(i)] = y;
    integral = integral && y >= 0 && y == std::floor(y) && y <= 1e6;
  }
  // Integral non-negative targets double as class labels; real-valued ones
  // serve regression families only.
  if (integral) {
    for (Eigen::Index i = 0; i < d.targets.size(); ++i) {
      d.labels.push_back(static_cast<int32_t>(d.targets[i]));
    }
    d.classes = ClassesOf(d.labels);
  }
  return d;
}

absl::StatusOr<Dataset> ReadDataset(const std::string& spec) {
  const std::vector<std::string> parts = absl::StrSplit(spec, ',');
  if (parts.size() == 2) return ReadIdx(parts[0], parts[1]);
  if (absl::EndsWith(spec, ".csv") || absl::EndsWith(spec, ".csv.gz")) return ReadCsv(spec);
  return ReadLibsvm(spec);
}

}  // namespace f2obo::data
