// An aux part's bytes as the store and the streamed transfer carry them
// (EncodeAuxPart, core/state.h: its numbers as little-endian doubles),
// without a copy where the machine's own order is little-endian: a writer
// of a 1,000,000-task state then reads every part where
// it is instead of holding a second, encoded copy of the session.
#ifndef F2OBO_CORE_AUX_PART_BYTES_H_
#define F2OBO_CORE_AUX_PART_BYTES_H_

#include <string>

#include "absl/base/config.h"
#include "absl/strings/string_view.h"
#include "core/state.h"
#include "core/types.h"

namespace f2obo {

// Valid while `v` (and, on a big-endian machine, `scratch`) is unchanged.
inline absl::string_view AuxPartBytes(const Vector& v, std::string* scratch) {
#if defined(ABSL_IS_LITTLE_ENDIAN)
  (void)scratch;
  return absl::string_view(reinterpret_cast<const char*>(v.data()),
                           8 * static_cast<size_t>(v.size()));
#else
  *scratch = EncodeAuxPart(v);
  return *scratch;
#endif
}

}  // namespace f2obo

#endif  // F2OBO_CORE_AUX_PART_BYTES_H_
