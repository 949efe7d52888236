#include "server/fault_points.h"

#include <atomic>
#include <memory>

namespace f2obo::server {
namespace {

// Null in production: nothing sets it.
std::shared_ptr<const FaultHandler>& Handler() {
  static auto* handler = new std::shared_ptr<const FaultHandler>();
  return *handler;
}

}  // namespace

absl::Status FaultPoint(std::string_view point, std::string_view id) {
  const std::shared_ptr<const FaultHandler> handler = std::atomic_load(&Handler());
  if (handler == nullptr) return absl::OkStatus();
  return (*handler)(point, id);
}

void SetFaultHandlerForTesting(FaultHandler handler) {
  std::atomic_store(&Handler(), handler ? std::make_shared<const FaultHandler>(std::move(handler))
                                        : std::shared_ptr<const FaultHandler>());
}

}  // namespace f2obo::server
