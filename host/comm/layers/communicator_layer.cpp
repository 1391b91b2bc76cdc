#include "comm/layers/communicator_layer.hpp"

#include "comm/core/host_group.hpp"

#include <stdexcept>

namespace gradsweep::comm {

CommunicatorLayer::CommunicatorLayer(std::unique_ptr<HostCommunicator> next)
    : owned_(std::move(next)), next_(*owned_), host_(*owned_) {
  share_ledger_with(*owned_);
}

CommunicatorLayer::CommunicatorLayer(sdk::Communicator& view, sdk::Algorithm algorithm, CommunicatorLayer& owner)
    : next_(view), host_(owner.host_), owner_(&owner), algorithm_(algorithm) {
  share_ledger_with(owner);
}

// The views go before the communicator they view.
CommunicatorLayer::~CommunicatorLayer() { views_.clear(); }

sdk::Status CommunicatorLayer::with_algorithm(sdk::Algorithm algorithm, sdk::Communicator** view) noexcept {
  // A view's with_algorithm is its owner's, as on the backends: views of views are the same views.
  if (owner_ != nullptr) return owner_->with_algorithm(algorithm, view);
  return sdk::guard([&] {
    sdk::Communicator* inner = nullptr;
    sdk::check(next_.with_algorithm(algorithm, &inner));
    if (view == nullptr) throw std::invalid_argument("with_algorithm: view is null");
    if (inner == &next_) {
      *view = this;
      return;
    }
    const std::lock_guard<std::mutex> lock(views_mutex_);
    std::unique_ptr<CommunicatorLayer>& layer = views_[algorithm];
    if (!layer) layer = over_view(*inner, algorithm);
    *view = layer.get();
  });
}

sdk::Status CommunicatorLayer::wrap_group(sdk::Status made, std::unique_ptr<sdk::Group>* group) {
  if (!made.ok || group == nullptr || !*group) return made;
  return sdk::guard([&] {
    auto* host_group = dynamic_cast<HostGroup*>(group->get());
    if (host_group == nullptr)
      throw std::logic_error(std::string(backend()) +
                             " backend: its group is not a HostGroup, so no layer can wrap it");
    std::unique_ptr<HostCommunicator> inner = host_group->release();
    *group = std::make_unique<HostGroup>(over_group(std::move(inner)));
  });
}

sdk::Status CommunicatorLayer::split(int color, int key, std::unique_ptr<sdk::Group>* group) noexcept {
  return wrap_group(next_.split(color, key, group), group);
}

sdk::Status CommunicatorLayer::group(sdk::GroupKind kind, std::unique_ptr<sdk::Group>* group) noexcept {
  return wrap_group(next_.group(kind, group), group);
}

std::string algorithm_prefix(sdk::Algorithm algorithm) {
  switch (algorithm) {
    case sdk::Algorithm::Native: return "";
    case sdk::Algorithm::Ring: return "ring ";
    case sdk::Algorithm::Hierarchical: return "hierarchical ";
  }
  return "algorithm " + std::to_string(static_cast<std::uint32_t>(algorithm)) + " ";
}

}  // namespace gradsweep::comm
