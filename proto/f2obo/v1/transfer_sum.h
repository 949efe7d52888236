// The checksum that ends a streamed session transfer (transfer.proto,
// TransferEnd.crc32), computed the same way by the exporting server, the
// importing server and any client that checks or relays a stream.
//
// CRC-32 (zlib's) rather than core/word_hash.h: a Python client checks it
// with the standard library's zlib.crc32 at C speed, and the content is
// fed in pieces whose boundaries (chunks, slices) must not change the
// value, which a CRC's running state gives for free.
#ifndef F2OBO_PROTO_F2OBO_V1_TRANSFER_SUM_H_
#define F2OBO_PROTO_F2OBO_V1_TRANSFER_SUM_H_

#include <cstdint>

#include "absl/strings/string_view.h"

namespace f2obo::v1 {

class TransferSum {
 public:
  TransferSum();
  // The stream's content in order (TransferEnd.crc32): the spec's bytes;
  // each part sent, announced by its number; the bytes of its slices; each
  // reply.
  void AddSpec(absl::string_view bytes) { Add(bytes); }
  void BeginPart(int64_t part);  // its number as 8 little-endian bytes
  void AddSlice(absl::string_view bytes) { Add(bytes); }
  void AddReply(absl::string_view bytes);  // its length (8 bytes LE), then its bytes
  uint32_t value() const { return static_cast<uint32_t>(crc_); }

 private:
  void Add(absl::string_view bytes);
  void AddInt(int64_t v);
  unsigned long crc_;  // NOLINT(runtime/int): zlib's uLong
};

}  // namespace f2obo::v1

#endif  // F2OBO_PROTO_F2OBO_V1_TRANSFER_SUM_H_
