#include "f2obo/v1/transfer_sum.h"

#include <zlib.h>

namespace f2obo::v1 {

TransferSum::TransferSum() : crc_(crc32_z(0, nullptr, 0)) {}

void TransferSum::Add(absl::string_view bytes) {
  crc_ = crc32_z(crc_, reinterpret_cast<const Bytef*>(bytes.data()), bytes.size());
}

void TransferSum::AddInt(int64_t v) {
  unsigned char le[8];
  const uint64_t u = static_cast<uint64_t>(v);
  for (int i = 0; i < 8; ++i) le[i] = static_cast<unsigned char>(u >> (8 * i));
  crc_ = crc32_z(crc_, le, sizeof(le));
}

void TransferSum::BeginPart(int64_t part) { AddInt(part); }

void TransferSum::AddReply(absl::string_view bytes) {
  AddInt(static_cast<int64_t>(bytes.size()));
  Add(bytes);
}

}  // namespace f2obo::v1
