#include "server/store/postgres/pg_size_cap.h"

#include <chrono>

#include "absl/strings/str_cat.h"

namespace f2obo::server::pg {

namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

void SizeCap::Set(int64_t max_bytes) {
  absl::MutexLock lock(&mu_);
  max_bytes_ = max_bytes;
  checked_ms_ = 0;
  over_ = false;
}

absl::Status SizeCap::Check(Conn& c) {
  int64_t cap;
  {
    absl::MutexLock lock(&mu_);
    cap = max_bytes_;
    if (cap <= 0) return absl::OkStatus();
    if (NowMs() - checked_ms_ < 1000) {
      return over_ ? absl::ResourceExhaustedError(absl::StrCat(
                         "the PostgreSQL store is at its cap (--max_store_bytes ", cap, ")"))
                   : absl::OkStatus();
    }
  }
  absl::StatusOr<Result> r =
      c.Run("reading the store's size", "SELECT pg_database_size(current_database())::bigint");
  if (!r.ok()) return r.status();
  const int64_t size = r->Int(0, 0);
  absl::MutexLock lock(&mu_);
  checked_ms_ = NowMs();
  over_ = size >= cap;
  if (over_) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the PostgreSQL store holds ", size, " bytes, at its cap (--max_store_bytes ", cap, ")"));
  }
  return absl::OkStatus();
}

}  // namespace f2obo::server::pg
