// Sessions larger than a message, on the client's side
// (proto/f2obo/v1/transfer.proto): a session's export received chunk by
// chunk (ExportSessionStream), an import sent chunk by chunk
// (ImportSessionStream), and the two joined, so that a session moves from
// one server to another holding one chunk at a time (f2obo-cli rebalance).
#ifndef F2OBO_CLIENT_SESSION_TRANSFER_H_
#define F2OBO_CLIENT_SESSION_TRANSFER_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "client/client.h"
#include "f2obo/v1/transfer.pb.h"

namespace f2obo::client {

// Receives session `id`'s export from `c`, handing each chunk to `sink` as
// it arrives (an error from `sink` cancels the export and is returned).
// `chunk_bytes`: ExportSessionStreamRequest.chunk_bytes (0: the server's
// default).
absl::Status ExportSessionChunks(Client& c, const std::string& id,
                                 const std::function<absl::Status(const v1::SessionChunk&)>& sink,
                                 int64_t chunk_bytes = 0);

// Creates a session on `c` from the chunks `source` gives (true: *chunk was
// filled; false: the stream is over; an error cancels the import, which
// then leaves nothing on the server).  `new_id` renames it ("" keeps the
// exported id).
using ChunkSource = std::function<absl::StatusOr<bool>(v1::SessionChunk* chunk)>;
absl::StatusOr<v1::SessionInfo> ImportSessionChunks(Client& c, const std::string& new_id,
                                                    const ChunkSource& source);

// Session `id` of `from` created on `to` (as `new_id`, "" keeps it), the
// export's chunks sent on as they arrive.  A failure of either side ends
// both calls and leaves nothing on `to`; it is returned prefixed with
// "export: " or "import: ".
absl::StatusOr<v1::SessionInfo> CopySession(Client& from, Client& to, const std::string& id,
                                            const std::string& new_id = "",
                                            int64_t chunk_bytes = 0);

}  // namespace f2obo::client

#endif  // F2OBO_CLIENT_SESSION_TRANSFER_H_
