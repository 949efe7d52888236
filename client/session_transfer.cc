#include "client/session_transfer.h"

#include <memory>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/session_routing.h"

namespace f2obo::client {
namespace {

absl::Status Prefixed(const char* what, const absl::Status& s) {
  return absl::Status(s.code(), absl::StrCat(what, s.message()));
}

}  // namespace

absl::Status ExportSessionChunks(Client& c, const std::string& id,
                                 const std::function<absl::Status(const v1::SessionChunk&)>& sink,
                                 int64_t chunk_bytes) {
  v1::ExportSessionStreamRequest req;
  req.set_session_id(id);
  req.set_chunk_bytes(chunk_bytes);
  auto ctx = c.NewContext();
  std::unique_ptr<grpc::ClientReader<v1::SessionChunk>> reader =
      c.stub().ExportSessionStream(ctx.get(), req);
  v1::SessionChunk chunk;
  while (reader->Read(&chunk)) {
    if (absl::Status s = sink(chunk); !s.ok()) {
      ctx->TryCancel();
      reader->Finish().ok();  // CANCELLED: ours
      return s;
    }
  }
  return FromGrpc(reader->Finish());
}

absl::StatusOr<v1::SessionInfo> ImportSessionChunks(Client& c, const std::string& new_id,
                                                    const ChunkSource& source) {
  auto ctx = c.NewContext();
  // The routing header comes from the first message (session_id, or the
  // exported id in chunk.begin): held back until it is written.
  PrepareStreamContext(ctx.get());
  v1::SessionInfo info;
  std::unique_ptr<grpc::ClientWriter<v1::ImportSessionStreamRequest>> writer =
      c.stub().ImportSessionStream(ctx.get(), &info);
  v1::ImportSessionStreamRequest req;
  req.set_session_id(new_id);
  for (;;) {
    absl::StatusOr<bool> more = source(req.mutable_chunk());
    if (!more.ok()) {
      // Cancelled, the server drops what it received: nothing is imported.
      ctx->TryCancel();
      writer->Finish().ok();
      return more.status();
    }
    if (!*more) break;
    // False: the server ended the call (a refusal); Finish says why.
    if (!writer->Write(req)) break;
    req.Clear();
  }
  writer->WritesDone();
  if (grpc::Status s = writer->Finish(); !s.ok()) return FromGrpc(s);
  return info;
}

absl::StatusOr<v1::SessionInfo> CopySession(Client& from, Client& to, const std::string& id,
                                            const std::string& new_id, int64_t chunk_bytes) {
  v1::ExportSessionStreamRequest req;
  req.set_session_id(id);
  req.set_chunk_bytes(chunk_bytes);
  auto ctx = from.NewContext();
  std::unique_ptr<grpc::ClientReader<v1::SessionChunk>> reader =
      from.stub().ExportSessionStream(ctx.get(), req);
  bool finished = false;
  const ChunkSource source = [&](v1::SessionChunk* chunk) -> absl::StatusOr<bool> {
    if (reader->Read(chunk)) return true;
    finished = true;
    if (grpc::Status s = reader->Finish(); !s.ok()) return Prefixed("export: ", FromGrpc(s));
    return false;
  };
  absl::StatusOr<v1::SessionInfo> info = ImportSessionChunks(to, new_id, source);
  if (!finished) {  // the import ended first (refused): stop the export
    ctx->TryCancel();
    reader->Finish().ok();
  }
  if (!info.ok() && !absl::StartsWith(info.status().message(), "export: ")) {
    return Prefixed("import: ", info.status());
  }
  return info;
}

}  // namespace f2obo::client
