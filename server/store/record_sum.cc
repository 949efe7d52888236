#include "server/store/record_sum.h"

#include <cstring>
#include <string>

#include "core/word_hash.h"

namespace f2obo::server::store_detail {
namespace {

constexpr uint64_t kRecordSeed = 0x663272656373756dULL;  // "f2recsum"

void AppendU64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
}

int64_t ToSigned(uint64_t h) {
  int64_t out;
  std::memcpy(&out, &h, sizeof(out));
  return out;
}

using SumFn = int64_t (*)(absl::string_view, absl::string_view, int64_t, absl::string_view);

void SqlSum(sqlite3_context* ctx, int argc, sqlite3_value** argv, SumFn sum) {
  if (argc != 4) {
    sqlite3_result_error(ctx, "f2obo_sum: 4 arguments", -1);
    return;
  }
  const auto bytes = [](sqlite3_value* v) {
    const void* p = sqlite3_value_blob(v);  // text or blob: the same bytes
    return absl::string_view(static_cast<const char*>(p),
                             p == nullptr ? 0 : sqlite3_value_bytes(v));
  };
  sqlite3_result_int64(
      ctx, sum(bytes(argv[0]), bytes(argv[1]), sqlite3_value_int64(argv[2]), bytes(argv[3])));
}

}  // namespace

int64_t RecordSum(absl::string_view tag, absl::string_view id, int64_t t, absl::string_view blob) {
  std::string header;
  header.reserve(24 + tag.size() + id.size());
  AppendU64(header, tag.size());
  header.append(tag.data(), tag.size());
  AppendU64(header, id.size());
  header.append(id.data(), id.size());
  AppendU64(header, static_cast<uint64_t>(t));
  return ToSigned(WordHash(WordHash(kRecordSeed, header), blob));
}

int64_t RecordSumFnv(absl::string_view tag, absl::string_view id, int64_t t,
                     absl::string_view blob) {
  uint64_t h = 0xcbf29ce484222325ULL;
  const auto mix = [&h](const void* p, size_t n) {
    const unsigned char* b = static_cast<const unsigned char*>(p);
    for (size_t i = 0; i < n; ++i) {
      h ^= b[i];
      h *= 0x100000001b3ULL;
    }
  };
  const auto field = [&](absl::string_view v) {
    const uint64_t n = v.size();  // length-prefixed: no two splits hash alike
    mix(&n, sizeof(n));
    mix(v.data(), v.size());
  };
  field(tag);
  field(id);
  mix(&t, sizeof(t));
  field(blob);
  return ToSigned(h);
}

void SqlRecordSum(sqlite3_context* ctx, int argc, sqlite3_value** argv) {
  SqlSum(ctx, argc, argv, RecordSum);
}

void SqlRecordSumFnv(sqlite3_context* ctx, int argc, sqlite3_value** argv) {
  SqlSum(ctx, argc, argv, RecordSumFnv);
}

}  // namespace f2obo::server::store_detail
