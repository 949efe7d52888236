#include "client/session_file.h"

#include <fcntl.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/util/delimited_message_util.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"

namespace f2obo::client {
namespace {

constexpr size_t kMagicBytes = sizeof(kSessionFileMagic) - 1;

absl::Status Errno(const std::string& what, const std::string& path) {
  return absl::FailedPreconditionError(absl::StrCat(what, " ", path, ": ", std::strerror(errno)));
}

uint64_t RandomSuffix() {
  static std::mutex mu;
  static std::mt19937_64 rng{std::random_device{}()};
  std::lock_guard<std::mutex> lock(mu);
  return rng();
}

}  // namespace

absl::StatusOr<std::unique_ptr<SessionFileWriter>> SessionFileWriter::Create(
    const std::string& path) {
  // A name of its own: two exports to the same path must not write into
  // one file (the last to commit gives `path` its content).  O_EXCL with
  // the process id and a random suffix; 0644 under the umask, as any file.
  std::string partial;
  int fd = -1;
  for (int attempt = 0; fd < 0; ++attempt) {
    partial = absl::StrCat(path, ".partial.", getpid(), ".", absl::Hex(RandomSuffix()));
    fd = open(partial.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0 && (errno != EEXIST || attempt == 16)) return Errno("cannot create", partial);
  }
  std::unique_ptr<SessionFileWriter> w(new SessionFileWriter(path, std::move(partial), fd));
  void* data;
  int size;
  if (!w->out_->Next(&data, &size) || size < static_cast<int>(kMagicBytes)) {
    return Errno("cannot write", partial);
  }
  std::memcpy(data, kSessionFileMagic, kMagicBytes);
  w->out_->BackUp(size - static_cast<int>(kMagicBytes));
  return w;
}

SessionFileWriter::SessionFileWriter(std::string path, std::string partial, int fd)
    : path_(std::move(path)),
      partial_(std::move(partial)),
      fd_(fd),
      out_(std::make_unique<google::protobuf::io::FileOutputStream>(fd)) {}

SessionFileWriter::~SessionFileWriter() {
  out_.reset();
  if (fd_ >= 0) close(fd_);
  if (!committed_) unlink(partial_.c_str());
}

absl::Status SessionFileWriter::Add(const v1::SessionChunk& chunk) {
  if (ended_) return absl::InvalidArgumentError("a chunk after the end chunk");
  if (!google::protobuf::util::SerializeDelimitedToZeroCopyStream(chunk, out_.get())) {
    errno = out_->GetErrno();
    return Errno("cannot write", partial_);
  }
  ++chunks_;
  bytes_ += static_cast<int64_t>(chunk.ByteSizeLong());
  ended_ = chunk.has_end();
  return absl::OkStatus();
}

absl::Status SessionFileWriter::Commit() {
  if (!ended_) {
    return absl::DataLossError(
        absl::StrCat("the export ended after ", chunks_, " chunks without its end chunk"));
  }
  if (!out_->Flush()) {
    errno = out_->GetErrno();
    return Errno("cannot write", partial_);
  }
  out_.reset();
  // Durable before it takes the name: a file called `path` is complete.
  if (fsync(fd_) != 0) return Errno("cannot sync", partial_);
  close(fd_);
  fd_ = -1;
  if (rename(partial_.c_str(), path_.c_str()) != 0) return Errno("cannot rename to", path_);
  committed_ = true;
  // The rename is durable once the directory is: without this a power loss
  // could leave no file at all (never a partial one) after a reported success.
  const std::string::size_type slash = path_.rfind('/');
  const std::string dir = slash == std::string::npos ? "."
                          : slash == 0               ? "/"
                                                     : path_.substr(0, slash);
  const int dir_fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) return Errno("cannot open the directory", dir);
  const bool synced = fsync(dir_fd) == 0;
  close(dir_fd);
  if (!synced) return Errno("cannot sync the directory", dir);
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<SessionFileReader>> SessionFileReader::Open(
    const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Errno("cannot open", path);
  std::unique_ptr<SessionFileReader> r(new SessionFileReader(path, fd));
  char magic[kMagicBytes];
  google::protobuf::io::CodedInputStream in(r->in_.get());
  if (!in.ReadRaw(magic, static_cast<int>(kMagicBytes)) ||
      std::memcmp(magic, kSessionFileMagic, kMagicBytes) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, " is not a session export (f2obo-cli export writes one: it begins with '",
        std::string(kSessionFileMagic, kMagicBytes - 1), "')"));
  }
  return r;
}

SessionFileReader::SessionFileReader(std::string path, int fd)
    : path_(std::move(path)),
      fd_(fd),
      in_(std::make_unique<google::protobuf::io::FileInputStream>(fd)) {}

SessionFileReader::~SessionFileReader() {
  in_.reset();
  close(fd_);
}

absl::Status SessionFileReader::Damaged(const std::string& what) const {
  return absl::DataLossError(
      absl::StrCat(path_, ": ", what, "; the file is damaged or cut short, nothing imported"));
}

absl::StatusOr<bool> SessionFileReader::Next(v1::SessionChunk* chunk) {
  bool clean_eof = false;
  if (ended_) {
    // Nothing may follow the end chunk.
    const void* data;
    int size;
    while (in_->Next(&data, &size)) {
      if (size > 0) return Damaged(absl::StrCat("bytes after the end chunk (chunk ", chunks_, ")"));
    }
    return false;
  }
  if (!google::protobuf::util::ParseDelimitedFromZeroCopyStream(chunk, in_.get(), &clean_eof)) {
    if (clean_eof) {
      return Damaged(
          absl::StrCat("the file ends after ", chunks_, " chunks, before the end chunk"));
    }
    return Damaged(absl::StrCat("chunk ", chunks_, " does not parse"));
  }
  if (chunks_ == 0 && !chunk->has_begin()) return Damaged("chunk 0 does not begin the transfer");
  if (chunk->has_begin()) sum_.AddSpec(chunk->begin().spec());
  for (const v1::StateSlice& s : chunk->slices()) {
    if (s.part() != part_) sum_.BeginPart(part_ = s.part());
    sum_.AddSlice(s.data());
  }
  for (const std::string& r : chunk->replies()) sum_.AddReply(r);
  if (chunk->has_end()) {
    ended_ = true;
    if (chunk->end().crc32() != sum_.value()) {
      return Damaged(absl::StrCat("checksum mismatch: the end chunk (chunk ", chunks_,
                                  ") says crc32 ", chunk->end().crc32(), ", the content read has ",
                                  sum_.value()));
    }
  }
  ++chunks_;
  return true;
}

}  // namespace f2obo::client
