// A session to a file and back: export, import (client/session_file.h has
// the file's format).  Both hold one chunk at a time, whatever the size of
// the session.
#include <cstdio>
#include <memory>
#include <string>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "client/cli/cli.h"
#include "client/session_file.h"
#include "client/session_transfer.h"

namespace f2obo::cli {

int RunExport() {
  const std::string id = absl::GetFlag(FLAGS_session);
  if (id.empty()) return UsageError("--session is required");
  const std::string path = absl::GetFlag(FLAGS_file);
  if (path.empty()) return UsageError("--file (the file to write) is required");
  absl::StatusOr<std::unique_ptr<client::SessionFileWriter>> file =
      client::SessionFileWriter::Create(path);
  if (!file.ok()) return UsageError(std::string(file.status().message()));
  client::Client c(ClientOptionsFromFlags());
  int64_t state_bytes = 0, replies = 0;
  bool file_failed = false;
  absl::Status s = client::ExportSessionChunks(
      c, id,
      [&](const v1::SessionChunk& chunk) {
        if (chunk.has_end()) {
          state_bytes = chunk.end().state_bytes();
          replies = chunk.end().replies();
        }
        absl::Status added = (*file)->Add(chunk);
        file_failed = !added.ok();
        return added;
      },
      absl::GetFlag(FLAGS_chunk_bytes));
  if (s.ok()) {
    s = (*file)->Commit();
    file_failed = !s.ok();
  }
  if (!s.ok()) {  // the partial file is removed with the writer
    return file_failed ? UsageError(absl::StrCat("export: ", s.message())) : RpcError("export", s);
  }
  std::printf("%s: %lld bytes of state, %lld cached replies, in %lld chunks (%lld bytes) to %s\n",
              id.c_str(), static_cast<long long>(state_bytes), static_cast<long long>(replies),
              static_cast<long long>((*file)->chunks()), static_cast<long long>((*file)->bytes()),
              path.c_str());
  return kExitOk;
}

int RunImport() {
  const std::string path = absl::GetFlag(FLAGS_file);
  if (path.empty()) return UsageError("--file (an export's file) is required");
  absl::StatusOr<std::unique_ptr<client::SessionFileReader>> file =
      client::SessionFileReader::Open(path);
  if (!file.ok()) return UsageError(std::string(file.status().message()));
  client::Client c(ClientOptionsFromFlags());
  bool file_failed = false;
  const absl::StatusOr<v1::SessionInfo> info = client::ImportSessionChunks(
      c, absl::GetFlag(FLAGS_id), [&](v1::SessionChunk* chunk) -> absl::StatusOr<bool> {
        absl::StatusOr<bool> next = (*file)->Next(chunk);
        file_failed = !next.ok();
        return next;
      });
  if (!info.ok()) {
    // A file found damaged cancels the import: nothing is left on the server.
    return file_failed ? UsageError(absl::StrCat("import: ", info.status().message()))
                       : RpcError("import", info.status());
  }
  std::printf("%s: next_t %lld, algorithm %s, from %s\n", info->session_id().c_str(),
              static_cast<long long>(info->next_t()), info->spec().algorithm().c_str(),
              path.c_str());
  return kExitOk;
}

}  // namespace f2obo::cli
