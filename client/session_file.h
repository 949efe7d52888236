// A session's streamed export kept in a file (f2obo-cli export / import):
// the SessionChunk messages of ExportSessionStream (proto/f2obo/v1/
// transfer.proto), each length-delimited (its size as a varint, then its
// encoding: protobuf's delimited format), after a 16-byte magic line
// "f2obo.session.1\n".  Written and read one chunk at a time, so that
// memory stays at one chunk whatever the session's size; the reader checks
// the file as it goes (the chunks parse, the end chunk comes last and its
// CRC-32 matches the content read), so that a damaged or cut file is
// refused before the server's own checks, which still run.
#ifndef F2OBO_CLIENT_SESSION_FILE_H_
#define F2OBO_CLIENT_SESSION_FILE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "f2obo/v1/transfer.pb.h"
#include "f2obo/v1/transfer_sum.h"

namespace google::protobuf::io {
class FileInputStream;
class FileOutputStream;
}  // namespace google::protobuf::io

namespace f2obo::client {

inline constexpr char kSessionFileMagic[] = "f2obo.session.1\n";

// Writes `path` all or nothing: the chunks go to a file of the writer's own,
// "<path>.partial.XXXXXX", which Commit (after the end chunk) syncs and
// renames to `path`, then syncs the directory; destroyed before that, the
// writer removes it.  Writers to one path do not share a file: the last to
// commit gives `path` its content.
class SessionFileWriter {
 public:
  static absl::StatusOr<std::unique_ptr<SessionFileWriter>> Create(const std::string& path);
  ~SessionFileWriter();
  absl::Status Add(const v1::SessionChunk& chunk);
  absl::Status Commit();
  int64_t chunks() const { return chunks_; }
  int64_t bytes() const { return bytes_; }

 private:
  SessionFileWriter(std::string path, std::string partial, int fd);
  const std::string path_, partial_;
  int fd_;
  std::unique_ptr<google::protobuf::io::FileOutputStream> out_;
  int64_t chunks_ = 0, bytes_ = 0;
  bool ended_ = false, committed_ = false;
};

// Reads a file SessionFileWriter wrote, chunk by chunk.  Errors (the file
// unreadable, not such a file, a chunk that does not parse, the file cut
// before its end chunk or going on after it, a checksum mismatch) are
// DATA_LOSS or INVALID_ARGUMENT naming the file and the chunk.
class SessionFileReader {
 public:
  static absl::StatusOr<std::unique_ptr<SessionFileReader>> Open(const std::string& path);
  ~SessionFileReader();
  // The next chunk into *chunk (true), or the end of the file after the
  // end chunk (false).
  absl::StatusOr<bool> Next(v1::SessionChunk* chunk);
  int64_t chunks() const { return chunks_; }

 private:
  SessionFileReader(std::string path, int fd);
  absl::Status Damaged(const std::string& what) const;
  const std::string path_;
  int fd_;
  std::unique_ptr<google::protobuf::io::FileInputStream> in_;
  v1::TransferSum sum_;
  int64_t part_ = -1;  // the part the last slice belonged to
  int64_t chunks_ = 0;
  bool ended_ = false;
};

}  // namespace f2obo::client

#endif  // F2OBO_CLIENT_SESSION_FILE_H_
