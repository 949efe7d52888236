#include "core/simple/algorithms/stream_windows.h"

#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"

namespace f2obo {
namespace {

constexpr const char* kKind[2] = {"upper", "inner"};
constexpr BatchRole kRole[2] = {BatchRole::kUpper, BatchRole::kInner};

}  // namespace

void StreamWindows::AppendInitial(StateParts* aux) const {
  aux->push_back(Vector::Zero(2));
  std::vector<Vector> encoded;
  RowWindow(capacity_, 0).Encode(&encoded);
  RowWindow(capacity_, 0).Encode(&encoded);
  for (Vector& v : encoded) aux->push_back(std::move(v));
}

absl::Status StreamWindows::Validate(const StateParts& aux, int first) const {
  StreamWindows copy(capacity_);
  return copy.Decode(aux, first, /*trusted=*/false);
}

absl::Status StreamWindows::ValidateRows(const StateParts& aux, int first,
                                         const SimpleFamily& family) const {
  StreamWindows copy(capacity_);
  if (absl::Status s = copy.Decode(aux, first, /*trusted=*/false); !s.ok()) return s;
  for (int k = 0; k < 2; ++k) {
    if (copy.windows_[k].size() == 0) continue;
    if (absl::Status s = family.ValidateBatch(copy.windows_[k].rows(), kRole[k]); !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("aux[", first + 1 + k * RowWindow::kEncodedVectors, "]: the ", kKind[k],
                       " window's rows are not ones this family accepts: ", s.message()));
    }
  }
  return absl::OkStatus();
}

absl::Status StreamWindows::Decode(const StateParts& aux, int first, bool trusted) {
  if (static_cast<int>(aux.size()) < first + kVectors) {
    return absl::InvalidArgumentError(absl::StrCat("aux[", aux.size(),
                                                   "]: missing; the row windows take aux[", first,
                                                   "] to aux[", first + kVectors - 1, "]"));
  }
  const Vector& cols = aux[first];
  if (cols.size() != 2) {
    return absl::InvalidArgumentError(absl::StrCat("aux[", first, "]: has ", cols.size(),
                                                   " entries, expected 2 (the windows' widths)"));
  }
  for (int k = 0; k < 2; ++k) {
    const double c = cols[k];
    if (!(c >= 0.0 && c <= 2147483647.0 && std::floor(c) == c)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "aux[", first, "]: the ", kKind[k], " window's width ", c, " is not a whole number"));
    }
    cols_[k] = static_cast<int>(c);
    absl::StatusOr<RowWindow> w = RowWindow::Decode(aux, first + 1 + k * RowWindow::kEncodedVectors,
                                                    capacity_, cols_[k], trusted);
    if (!w.ok()) return w.status();
    windows_[k] = *std::move(w);
  }
  return absl::OkStatus();
}

absl::Status StreamWindows::LoadAndAppend(const StateParts& aux, int first, SimpleFamily& family,
                                          const StepData& data) {
  if (absl::Status s = Decode(aux, first, /*trusted=*/true); !s.ok()) return s;
  const Batch* step[2] = {&data.upper, &data.inner};
  for (int k = 0; k < 2; ++k) {
    if (step[k]->rows() == 0) continue;
    if (cols_[k] == 0) {
      cols_[k] = step[k]->cols();
      windows_[k] = RowWindow(capacity_, cols_[k]);
    } else if (step[k]->cols() != cols_[k]) {
      return absl::InvalidArgumentError(
          absl::StrCat("aux[", first, "]: the ", kKind[k], " window holds rows of ", cols_[k],
                       " columns and the step's ", kKind[k], " batch has ", step[k]->cols()));
    }
    windows_[k].Append(*step[k]);
  }
  return absl::OkStatus();
}

void StreamWindows::Store(int first, StateParts* aux) const {
  (*aux)[first][0] = cols_[0];
  (*aux)[first][1] = cols_[1];
  std::vector<Vector> encoded;
  encoded.reserve(2 * RowWindow::kEncodedVectors);
  windows_[0].Encode(&encoded);
  windows_[1].Encode(&encoded);
  for (size_t i = 0; i < encoded.size(); ++i) aux->Set(first + 1 + i, std::move(encoded[i]));
}

}  // namespace f2obo
